package httpapi

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apprun/apprun/engine"
)

// Every code of the error table (engine/errors.json) has an HTTP error
// status, and the API answers the code with it, in the envelope, with the
// table's message when the error carries none.
func TestEveryCodeIsAnsweredWithItsStatus(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.DiscardHandler)
	for _, info := range tableCodes(t) {
		if info.Status < 400 || info.Status > 599 || http.StatusText(info.Status) == "" {
			t.Errorf("%s: status %d is not a known HTTP error status", info.Code, info.Status)
		}
		if got := StatusOf(info.Code); got != info.Status {
			t.Errorf("StatusOf(%s) = %d, the table says %d", info.Code, got, info.Status)
		}
		for _, msg := range []string{"its own words", ""} {
			rec := httptest.NewRecorder()
			writeError(rec, httptest.NewRequest(http.MethodGet, "/api/v1/runs", nil), logger, &engine.Error{Code: info.Code, Message: msg})
			want := envelope{errorBody{Code: info.Code, Message: msg}}
			if msg == "" {
				want.Error.Message = info.Message
			}
			var got envelope
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != info.Status || got != want {
				t.Errorf("%s with message %q: answered %d %s, want %d %+v", info.Code, msg, rec.Code, rec.Body, info.Status, want)
			}
		}
	}
	if got := StatusOf("no_such_code"); got != http.StatusInternalServerError {
		t.Errorf("a code with no entry: %d, want 500", got)
	}
}

// docsErrorRow is a row of docs/api.md's error table.
type docsErrorRow struct {
	line     int
	statuses []int
	anchors  []string // the ids of the row's <a id="…"> anchors
}

// docsErrors reads docs/api.md: the rows of the error table (the
// "| HTTP | code | when |" table under "## Errors") by code, and every
// anchor a link can point to (the headings' and the <a id="…">s).
func docsErrors(t *testing.T) (rows map[engine.Code]docsErrorRow, anchors map[string]int) {
	t.Helper()
	raw, err := os.ReadFile("../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	idRe := regexp.MustCompile(`<a id="([^"]+)"></a>`)
	codeRe := regexp.MustCompile("`([a-z0-9_]+)`")
	anchors = map[string]int{}
	rows = map[engine.Code]docsErrorRow{}
	section, table := "", false
	for i, line := range lines {
		for _, m := range idRe.FindAllStringSubmatch(line, -1) {
			anchors[m[1]]++
		}
		if h, ok := strings.CutPrefix(line, "#"); ok {
			h = strings.TrimLeft(h, "#")
			anchors[headingSlug(h)]++
			if strings.HasPrefix(line, "## ") {
				section = strings.TrimSpace(h)
			}
			continue
		}
		if section != "Errors" {
			continue
		}
		if strings.HasPrefix(line, "| HTTP | code | when |") {
			table = true
			continue
		}
		if !table || strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| ") || len(cells) < 3 {
			table = false
			continue
		}
		row := docsErrorRow{line: i + 1}
		for _, s := range strings.Split(strings.TrimPrefix(cells[0], "| "), "/") {
			st, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				t.Fatalf("docs/api.md:%d: the HTTP column %q is not statuses", i+1, cells[0])
			}
			row.statuses = append(row.statuses, st)
		}
		for _, m := range idRe.FindAllStringSubmatch(cells[1], -1) {
			row.anchors = append(row.anchors, m[1])
		}
		codes := codeRe.FindAllStringSubmatch(cells[1], -1)
		if len(codes) == 0 {
			t.Fatalf("docs/api.md:%d: the error table's row names no code", i+1)
		}
		for _, m := range codes {
			if prev, ok := rows[engine.Code(m[1])]; ok {
				t.Errorf("docs/api.md:%d: %s has a row already, at line %d", i+1, m[1], prev.line)
			}
			rows[engine.Code(m[1])] = row
		}
	}
	if len(rows) == 0 {
		t.Fatal("docs/api.md has no error table (| HTTP | code | when | under ## Errors)")
	}
	return rows, anchors
}

// headingSlug is the anchor GitHub gives a heading: lower case, spaces as
// hyphens, punctuation other than - and _ dropped.
func headingSlug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Every code of the table is a row of docs/api.md's error table with its
// status, and its anchor resolves to one place in docs/api.md (its row's,
// when the anchor is one of the table's own); the table documents no code
// the table does not have.
func TestEveryCodeIsInTheDocsErrorTable(t *testing.T) {
	t.Parallel()
	rows, anchors := docsErrors(t)
	for _, info := range tableCodes(t) {
		row, ok := rows[info.Code]
		if !ok {
			t.Errorf("%s is not in docs/api.md's error table: add a row | %d | <a id=%q></a>`%s` | when |", info.Code, info.Status, info.Anchor, info.Code)
			continue
		}
		if !slices.Contains(row.statuses, info.Status) {
			t.Errorf("docs/api.md:%d: %s is documented as %v, the table says %d", row.line, info.Code, row.statuses, info.Status)
		}
		switch n := anchors[info.Anchor]; {
		case n == 0:
			t.Errorf("%s: docs/api.md#%s does not resolve: no heading or <a id> is %q", info.Code, info.Anchor, info.Anchor)
		case n > 1:
			t.Errorf("%s: docs/api.md#%s is ambiguous: %d places are %q", info.Code, info.Anchor, n, info.Anchor)
		}
		for _, a := range row.anchors {
			if a != info.Anchor {
				t.Errorf("docs/api.md:%d: %s's row has the anchor %q; the table says %q", row.line, info.Code, a, info.Anchor)
			}
		}
	}
	for code, row := range rows {
		if _, ok := code.Info(); !ok {
			t.Errorf("docs/api.md:%d documents %s, which is not in engine/errors.json", row.line, code)
		}
	}
}

// Every code an operation of the OpenAPI document lists is in the table,
// and is documented under the table's status; every error response of
// the document lists only codes the table answers with that status
// (internal_error is also a 503: writeError's answer when the event log
// is unreachable or busy).
func TestOpenAPIErrorResponsesMatchTheTable(t *testing.T) {
	t.Parallel()
	for _, op := range operations {
		raw, err := json.Marshal(operationDoc(op)["responses"])
		if err != nil {
			t.Fatal(err)
		}
		var responses map[string]struct {
			Codes   []engine.Code `json:"x-error-codes"`
			Content struct {
				JSON struct {
					Schema struct {
						Ref string `json:"$ref"`
					} `json:"schema"`
				} `json:"application/json"`
			} `json:"content"`
		}
		if err := json.Unmarshal(raw, &responses); err != nil {
			t.Fatal(err)
		}
		documented := map[engine.Code][]int{}
		for key, resp := range responses {
			st, _ := strconv.Atoi(key)
			if st < 400 {
				continue
			}
			if ref := resp.Content.JSON.Schema.Ref; ref != "#/components/schemas/Error" {
				t.Errorf("%s: the %d response's schema is %q, want the Error envelope", op.id, st, ref)
			}
			enum := resp.Codes
			if len(enum) == 0 {
				t.Errorf("%s: the %d response lists no error code", op.id, st)
			}
			for _, c := range enum {
				documented[c] = append(documented[c], st)
				info, ok := c.Info()
				switch {
				case !ok:
					t.Errorf("%s: the %d response lists %s, which is not in engine/errors.json", op.id, st, c)
				case info.Status != st && !(c == engine.CodeInternal && st == http.StatusServiceUnavailable):
					t.Errorf("%s: the %d response lists %s, whose status is %d", op.id, st, c, info.Status)
				}
			}
		}
		for _, c := range op.codes {
			info, ok := c.Info()
			if !ok {
				t.Errorf("%s lists %s, which is not in engine/errors.json", op.id, c)
				continue
			}
			if !slices.Contains(documented[c], info.Status) {
				t.Errorf("%s: %s is not documented under its status %d (it is under %v)", op.id, c, info.Status, documented[c])
			}
		}
	}
}

// tableCodes is the error table as engine/errors.json, its source, holds
// it (engine's generated code is held to the file by its own test).
func tableCodes(t *testing.T) []engine.CodeInfo {
	t.Helper()
	data, err := os.ReadFile("../engine/errors.json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Code    engine.Code `json:"code"`
		Status  int         `json:"status"`
		Message string      `json:"message"`
		Anchor  string      `json:"anchor"`
	}
	if err := json.Unmarshal(data, &rows); err != nil {
		t.Fatal(err)
	}
	out := make([]engine.CodeInfo, len(rows))
	for i, r := range rows {
		out[i] = engine.CodeInfo{Code: r.Code, Status: r.Status, Message: r.Message, Anchor: r.Anchor}
	}
	if len(out) == 0 {
		t.Fatal("engine/errors.json holds no code")
	}
	return out
}
