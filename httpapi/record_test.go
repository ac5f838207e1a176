package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/apps"
	"github.com/apprun/apprun/llm/llmtest"
	"github.com/apprun/apprun/node"
	. "github.com/apprun/apprun/node/nodetest"
)

// Secrets a run meets that its record must never hold.
const (
	providerKey = "sk-provider-SECRET-4f1c9a"
	githubToken = "ghp_SECRET_7d2e"
	cookieValue = "session-SECRET-c00k1e"
)

// Every kind of run's record holds what it did — input with defaults,
// App version, price, each model exchange and source read, its events
// and ledger lines — and replays identically; no credential it met is
// anywhere on the node's disk.
func TestRunRecordsHoldEachRunWholeAndNoSecret(t *testing.T) {
	t.Parallel()
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: cookieValue})
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/pricing", http.StatusFound)
			return
		}
		w.Write([]byte(SourcePage))
	}))
	defer web.Close()
	fake := llmtest.New()
	defer fake.Close()
	chinese := strings.Replace(ModelSequence, "month-end at your agency", "月末结账只需一天", 1)
	fake.Script(llmtest.Reply{Text: ModelSequence}, llmtest.Reply{Text: "Sure! Here are some emails."}, llmtest.Reply{Text: "Here they are again."},
		llmtest.Reply{Text: MetaTagsReply}, llmtest.Reply{Text: chinese})
	h := Start(t, WithLimits(NoLimits), WithModel(fake), WithSourcesAllowPrivate(), func(c *node.Config) {
		c.Model.APIKey, c.GitHubToken = providerKey, githubToken
	})
	a := h.Account(1000)
	create := func(body map[string]any) string {
		t.Helper()
		r := h.Do("POST", "/api/v1/runs", a.Key, body, "Cookie", "apprun_session="+cookieValue)
		if r.Status != 201 {
			t.Fatalf("create: %d %s", r.Status, r.Body)
		}
		return r.JSON(t)["run_no"].(string)
	}
	completed := create(ColdEmailRun())
	h.WaitRun(a, completed)
	failed := create(ColdEmailRun())
	h.FailedWith(a, failed, "model_reply_invalid", 975)
	source := create(map[string]any{"app_slug": "meta-tags-from-page", "input": map[string]any{"page_url": web.URL + "/moved"}})
	h.WaitRun(a, source)
	zh := ColdEmailRun()
	zh["input"].(map[string]any)["interaction_language"] = "Chinese"
	chineseRun := create(zh)
	h.WaitRun(a, chineseRun)
	fake.Script(llmtest.Reply{Text: ModelSequence, Chunks: 40, ChunkDelay: 100 * time.Millisecond})
	canceled := create(ColdEmailRun())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ev := range must(h.Stream(ctx, a, canceled)) {
		if ev.Event == "tool_running" {
			break // the model is writing
		}
	}
	if r := h.Do("POST", "/api/v1/runs/"+canceled+"/cancel", a.Key, nil); r.Status != 200 {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}

	record := func(runNo string) map[string]any {
		t.Helper()
		r := h.Do("GET", "/api/v1/runs/"+runNo+"/record", a.Key, nil)
		if r.Status != 200 {
			t.Fatalf("record of %s: %d %s", runNo, r.Status, r.Body)
		}
		return r.JSON(t)
	}
	steps := func(rec map[string]any, kind string) []map[string]any {
		var out []map[string]any
		for _, s := range rec["steps"].([]any) {
			if st := s.(map[string]any); st["kind"] == kind {
				out = append(out, st)
			}
		}
		return out
	}
	for _, runNo := range []string{completed, failed, source, chineseRun, canceled} {
		rec := record(runNo)
		head := rec["head"].(map[string]any)
		input := head["input"].(map[string]any)
		if !strings.HasPrefix(head["app_version"].(string), "sha256:") || head["credit_cost"] == nil || len(input) == 0 {
			t.Fatalf("%s: head %v", runNo, head)
		}
		if input["interaction_language"] == nil && head["app_slug"] == "cold-email-writer" {
			t.Fatalf("%s: the input without its defaults: %v", runNo, input)
		}
		// The charge's ledger line holds the head's hash.
		lines := rec["ledger"].([]any)
		charge := lines[0].(map[string]any)
		if charge["type"] != "charge" || charge["record"] != rec["head_hash"] || charge["hash"] == "" {
			t.Fatalf("%s: ledger %v, head_hash %v", runNo, lines, rec["head_hash"])
		}
		if st := steps(rec, "start"); len(st) != 1 || st[0]["with_model"] != true {
			t.Fatalf("%s: start %v", runNo, st)
		}
		if len(rec["events"].([]any)) < 3 {
			t.Fatalf("%s: events %v", runNo, rec["events"])
		}
		if runNo == canceled {
			if rec["run"].(map[string]any)["status"] != "failed" || len(lines) != 2 {
				t.Fatalf("canceled: %v", rec)
			}
			continue
		}
		models := steps(rec, "model")
		want := 1
		if runNo == failed {
			want = 2 // the reply and its repair
		}
		if len(models) != want {
			t.Fatalf("%s: %d model steps, want %d", runNo, len(models), want)
		}
		m := models[0]
		msgs := m["messages"].([]any)
		if m["model"] != "fake-model" || !strings.HasPrefix(m["provider"].(string), fake.URL) || len(msgs) != 2 ||
			m["reply"] == nil || m["usage"].(map[string]any)["total_tokens"].(float64) <= 0 || m["started_at"] == nil || m["ended_at"] == nil {
			t.Fatalf("%s: model step %v", runNo, m)
		}
		// Replayed by the operator: identical, with no model call.
		calls := len(fake.Received())
		rep := h.Do("POST", "/admin/v1/runs/"+runNo+"/replay", AdminToken, nil).JSON(t)
		if rep["identical"] != true || len(fake.Received()) != calls {
			t.Fatalf("%s: replay %v (model calls %d → %d)", runNo, rep, calls, len(fake.Received()))
		}
	}
	if rec := record(failed); rec["run"].(map[string]any)["status"] != "failed" || len(rec["ledger"].([]any)) != 2 ||
		steps(rec, "model")[0]["reply"] != "Sure! Here are some emails." || steps(rec, "model")[1]["reply"] != "Here they are again." ||
		len(steps(rec, "model")[1]["messages"].([]any)) != 4 {
		t.Fatalf("failed: %v", rec)
	}
	src := steps(record(source), "source")
	if len(src) != 1 || src[0]["url"] != web.URL+"/moved" || src[0]["final_url"] != web.URL+"/pricing" || src[0]["status"] != float64(200) ||
		src[0]["bytes"] != float64(len(SourcePage)) || len(src[0]["sha256"].(string)) != 64 || src[0]["content"] != SourcePage {
		t.Fatalf("source step %v", src)
	}
	if reply := steps(record(chineseRun), "model")[0]["reply"].(string); !strings.Contains(reply, "月末结账只需一天") {
		t.Fatalf("the Chinese reply as recorded: %q", reply)
	}

	// Another account sees none of it.
	b := h.Account(10)
	if code := h.Do("GET", "/api/v1/runs/"+completed+"/record", b.Key, nil).ErrorCode(t); code != "run_not_found" {
		t.Fatalf("another account's record: %s", code)
	}

	// No credential met is on the node's disk: the log and the read models.
	h.Stop()
	secrets := [][]byte{[]byte(providerKey), []byte(githubToken), []byte(cookieValue), []byte(a.Key), []byte(AdminToken)}
	files := 0
	err := filepath.WalkDir(h.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for _, s := range secrets {
			if bytes.Contains(data, s) {
				t.Errorf("%s holds the secret %q", path, s)
			}
		}
		return nil
	})
	if err != nil || files < 3 {
		t.Fatalf("walked %d files: %v", files, err)
	}
}

func must[T any, U any, V any](a T, _ U, _ V) T { return a }

// A rerun with another model is one more create: charged once at today's
// price, linked to its source, and compared with it member by member.
// Another account's run cannot be rerun or compared.
func TestARerunWithAnotherModelIsChargedOnceAndCompares(t *testing.T) {
	t.Parallel()
	fake := llmtest.New()
	defer fake.Close()
	fake.Script(llmtest.Reply{Text: ModelSequence}, llmtest.Reply{Text: ModelSequence})
	h := Start(t, WithLimits(NoLimits), WithModel(fake), func(c *node.Config) { c.RerunModels = []string{"other-model"} })
	a := h.Account(100)
	first := h.Create(a, ColdEmailRun())
	// A model the operator does not offer: refused, nothing charged (a
	// run's price does not depend on its model).
	if r := h.Do("POST", "/api/v1/runs/"+first+"/rerun", a.Key, map[string]any{"model": "gpt-very-expensive"}); r.ErrorCode(t) != "invalid_request" ||
		!strings.Contains(string(r.Body), "other-model") {
		t.Fatalf("a model not offered: %d %s", r.Status, r.Body)
	}
	h.WaitRun(a, first)
	r := h.Do("POST", "/api/v1/runs/"+first+"/rerun", a.Key, map[string]any{"model": "other-model", "input": map[string]any{"cta_goal": "Meeting"}},
		"Idempotency-Key", "rerun-1")
	if r.Status != 201 {
		t.Fatalf("rerun: %d %s", r.Status, r.Body)
	}
	created := r.JSON(t)
	second := created["run_no"].(string)
	if created["rerun_of"] != first || len(created["changed"].([]any)) != 2 || created["changed"].([]any)[0] != "model" {
		t.Fatalf("rerun answer %v", created)
	}
	// The same request again is the same rerun, not a second charge.
	if again := h.Do("POST", "/api/v1/runs/"+first+"/rerun", a.Key, map[string]any{"model": "other-model", "input": map[string]any{"cta_goal": "Meeting"}},
		"Idempotency-Key", "rerun-1").JSON(t); again["run_no"] != second {
		t.Fatalf("the rerun retried: %v", again)
	}
	h.WaitRun(a, second)
	if bal, _ := h.Balance(a); bal != 50 {
		t.Fatalf("balance %d, want 100 - 2×25", bal)
	}
	if got := fake.Received(); len(got) != 2 || got[1].Model != "other-model" || got[0].Model != "fake-model" {
		t.Fatalf("models asked: %+v", got)
	}
	rec := h.Do("GET", "/api/v1/runs/"+second+"/record", a.Key, nil).JSON(t)
	if rec["rerun_of"] != first || rec["model"] != "other-model" || len(rec["rerun_changes"].([]any)) != 2 {
		t.Fatalf("the rerun's record: %v", rec)
	}
	cmp := h.Do("GET", "/api/v1/runs/"+first+"/compare?with="+second, a.Key, nil).JSON(t)
	runs := cmp["runs"].([]any)
	if cmp["same_model"] != false || cmp["same_input"] != false || cmp["same_output"] != false || cmp["same_app_version"] != true ||
		runs[0].(map[string]any)["model"] != "fake-model" || runs[1].(map[string]any)["model"] != "other-model" ||
		runs[1].(map[string]any)["rerun_of"] != first || runs[1].(map[string]any)["credit_cost"] != float64(25) {
		t.Fatalf("compare: %v", cmp)
	}
	// The input and the output (which repeats cta_goal) differ in
	// cta_goal only: the same reply wrote the same emails.
	for _, part := range []string{"input", "output"} {
		for _, m := range cmp[part].([]any) {
			if m := m.(map[string]any); (m["member"] == "cta_goal") == (m["same"] == true) {
				t.Fatalf("%s member %v", part, m)
			}
		}
	}
	b := h.Account(100)
	for _, r := range []Response{
		h.Do("POST", "/api/v1/runs/"+first+"/rerun", b.Key, map[string]any{}),
		h.Do("GET", "/api/v1/runs/"+first+"/compare?with="+second, b.Key, nil),
	} {
		if code := r.ErrorCode(t); code != "run_not_found" {
			t.Fatalf("another account's run: %s", code)
		}
	}
	if bal, _ := h.Balance(b); bal != 100 {
		t.Fatalf("a refused rerun charged: balance %d", bal)
	}
	if code := h.Do("POST", "/api/v1/runs/"+first+"/rerun", a.Key, map[string]any{"model": "bad model!"}).ErrorCode(t); code != "invalid_request" {
		t.Fatalf("a bad model name: %s", code)
	}
}

// An App whose definition changed replays its old runs as differing, and
// says where first; the other Apps' runs still replay identically.
func TestAChangedDefinitionMakesItsRunsDiffer(t *testing.T) {
	t.Parallel()
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(SourcePage)) }))
	defer web.Close()
	fake := llmtest.New()
	defer fake.Close()
	fake.Script(llmtest.Reply{Text: ModelSequence}, llmtest.Reply{Text: MetaTagsReply})
	h := Start(t, WithLimits(NoLimits), WithModel(fake), WithSourcesAllowPrivate())
	a := h.Account(100)
	email := h.Create(a, ColdEmailRun())
	h.WaitRun(a, email)
	page := h.Create(a, map[string]any{"app_slug": "meta-tags-from-page", "input": map[string]any{"page_url": web.URL + "/p"}})
	h.WaitRun(a, page)

	def, err := os.ReadFile("../apps/catalog/cold-email-writer.yaml")
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(def), "You are a senior B2B sales development writer.", "You are a senior B2B sales writer.", 1)
	if changed == string(def) {
		t.Fatal("the instructions to change are not in the definition")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cold-email-writer.yaml"), []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	h.Stop()
	h.Cfg.AppsDir = dir
	h.Boot()
	calls := len(fake.Received())
	rep := h.Do("POST", "/admin/v1/runs/"+email+"/replay", AdminToken, nil).JSON(t)
	diff, _ := rep["first_difference"].(map[string]any)
	if rep["identical"] != false || rep["recorded_version"] == rep["current_version"] || diff == nil ||
		diff["path"] != "steps[1].messages[0].content" || !strings.Contains(diff["recorded"].(string), "development") {
		t.Fatalf("replay after the change: %v", rep)
	}
	if rep := h.Do("POST", "/admin/v1/runs/"+page+"/replay", AdminToken, nil).JSON(t); rep["identical"] != true {
		t.Fatalf("another App's run: %v", rep)
	}
	bulk := h.Do("POST", "/admin/v1/runs/replay?app_slug=cold-email-writer", AdminToken, nil).JSON(t)
	if bulk["replayed"] != float64(1) || bulk["differing"] != float64(1) || len(bulk["differing_runs"].([]any)) != 1 || bulk["more"] != false {
		t.Fatalf("bulk replay: %v", bulk)
	}
	// Page by page: one run a call, every run of the App once (the one
	// made now, with the changed definition, replays identically), the
	// other App's runs not counted against the page.
	fake.Script(llmtest.Reply{Text: ModelSequence})
	more := h.Create(a, ColdEmailRun())
	h.WaitRun(a, more)
	var pages, identical int
	var differing []string
	cursor := ""
	for ; ; pages++ {
		page := h.Do("POST", "/admin/v1/runs/replay?app_slug=cold-email-writer&limit=1&cursor="+cursor, AdminToken, nil).JSON(t)
		if page["replayed"] != float64(1) || pages > 3 {
			t.Fatalf("page %d: %v", pages, page)
		}
		identical += int(page["identical"].(float64))
		for _, r := range page["differing_runs"].([]any) {
			differing = append(differing, r.(map[string]any)["run_no"].(string))
		}
		if page["more"] != true {
			break
		}
		cursor = page["next_cursor"].(string)
	}
	if pages != 1 || identical != 1 || len(differing) != 1 || differing[0] != email {
		t.Fatalf("page by page: %d pages, %d identical, differing %v", pages+1, identical, differing)
	}
	// A mistyped App, a period upside down, a parameter the call does not
	// take: refused, not an empty pass.
	for _, path := range []string{"/admin/v1/runs/replay?app_slug=nope", "/admin/v1/runs/replay?app_slug=cold-email-writer&from=2026-12-02&to=2026-12-01",
		"/admin/v1/runs/replay?app_slug=cold-email-writer&x=1"} {
		if r := h.Do("POST", path, AdminToken, nil); r.Status != 404 && r.Status != 400 {
			t.Fatalf("POST %s: %d %s", path, r.Status, r.Body)
		}
	}
	export := h.Do("GET", "/admin/v1/runs/export?limit=2&account_id="+a.ID, AdminToken, nil)
	lines := strings.Split(strings.TrimSpace(string(export.Body)), "\n")
	if len(lines) != 3 || !strings.Contains(lines[2], `"more":true`) {
		t.Fatalf("an export of 3 runs, 2 a call: %d lines, last %s", len(lines), lines[len(lines)-1])
	}
	if len(fake.Received()) != calls+1 { // the one run made since
		t.Fatal("a replay called the model")
	}

	// Only the model step's temperature changed: a difference too.
	warmer := strings.Replace(string(def), "temperature: 0.7", "temperature: 0.1", 1)
	if err := os.WriteFile(filepath.Join(dir, "cold-email-writer.yaml"), []byte(warmer), 0o644); err != nil {
		t.Fatal(err)
	}
	h.Stop()
	h.Boot()
	rep = h.Do("POST", "/admin/v1/runs/"+email+"/replay", AdminToken, nil).JSON(t)
	if diff, _ := rep["first_difference"].(map[string]any); rep["identical"] != false || diff == nil || diff["path"] != "steps[1].temperature" {
		t.Fatalf("replay after a change of temperature: %v", rep)
	}
}

// The record's size a run, by App shape: what BENCHMARKS.md reports (go
// test ./httpapi -run TestRecordSizes -v), and each text within the
// bound.
func TestRecordSizes(t *testing.T) {
	t.Parallel()
	var big strings.Builder
	big.WriteString("<!doctype html><html><head><title>A long pricing page</title></head><body><article><h1>Pricing</h1>")
	for i := 0; big.Len() < 300<<10; i++ {
		fmt.Fprintf(&big, "<p>Plan %d costs $%d a month and includes invoicing, receipts, bank sync, approvals and roles for teams of %d.</p>\n", i, 10+i, 1+i%50)
	}
	big.WriteString("</article></body></html>")
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			w.Write([]byte(big.String()))
			return
		}
		w.Write([]byte(SourcePage))
	}))
	defer web.Close()
	fake := llmtest.New()
	defer fake.Close()
	fake.Answer = func(r llmtest.Received) llmtest.Reply {
		if strings.Contains(r.System(), "meta") {
			return llmtest.Reply{Text: MetaTagsReply}
		}
		return llmtest.Reply{Text: ModelSequence}
	}
	plain := Start(t, WithLimits(NoLimits))
	model := Start(t, WithLimits(NoLimits), WithModel(fake), WithSourcesAllowPrivate())
	for _, tc := range []struct {
		shape string
		h     *Harness
		body  map[string]any
	}{
		{"cold-email-writer, built-in writer (no model)", plain, ColdEmailRun()},
		{"cold-email-writer, one model call", model, ColdEmailRun()},
		{"meta-tags-from-page, a 0.4 KiB page and a model call", model, map[string]any{"app_slug": "meta-tags-from-page", "input": map[string]any{"page_url": web.URL + "/p"}}},
		{"meta-tags-from-page, a 300 KiB page (cut) and a model call", model, map[string]any{"app_slug": "meta-tags-from-page", "input": map[string]any{"page_url": web.URL + "/big"}}},
	} {
		a := tc.h.Account(100)
		runNo := tc.h.Create(a, tc.body)
		tc.h.WaitRun(a, runNo)
		r := tc.h.Do("GET", "/api/v1/runs/"+runNo+"/record", a.Key, nil)
		var doc struct {
			Events []struct {
				Data json.RawMessage `json:"data"`
			} `json:"events"`
			Steps []struct {
				Truncated bool `json:"truncated"`
			} `json:"steps"`
		}
		if err := json.Unmarshal([]byte(r.Body), &doc); err != nil {
			t.Fatal(err)
		}
		logBytes, recBytes, truncated := 0, 0, 0
		for _, ev := range doc.Events {
			logBytes += len(ev.Data)
			if bytes.Contains(ev.Data, []byte(`"type":"recorded"`)) {
				recBytes += len(ev.Data)
				if len(ev.Data) > 3*apps.RecordBound+16<<10 {
					t.Fatalf("%s: one record event of %d bytes, past three texts at the bound", tc.shape, len(ev.Data))
				}
			}
		}
		for _, s := range doc.Steps {
			if s.Truncated {
				truncated++
			}
		}
		t.Logf("| %s | %d | %d | %d | %d |", tc.shape, recBytes, logBytes, len(r.Body), truncated)
	}
}

// A source that could not be reached replays as the same failure: the
// GitHub API down for both tries of oss-growth.
func TestAnUnreachableSourceReplaysAsTheSameFailure(t *testing.T) {
	t.Parallel()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	fake := llmtest.New()
	defer fake.Close()
	h := Start(t, WithLimits(NoLimits), WithModel(fake), func(c *node.Config) { c.GitHubAPI = gone.URL })
	a := h.Account(100)
	runNo := h.Create(a, map[string]any{"app_slug": "oss-growth", "input": map[string]any{"repo_url": "https://github.com/acme/ledger"}})
	if run := h.WaitRun(a, runNo); run["status"] != "failed" {
		t.Fatalf("run %v", run)
	}
	rec := h.Do("GET", "/api/v1/runs/"+runNo+"/record", a.Key, nil).JSON(t)
	if n := len(rec["steps"].([]any)); n != 3 { // start, and two tries
		t.Fatalf("%d steps recorded: %v", n, rec["steps"])
	}
	if rep := h.Do("POST", "/admin/v1/runs/"+runNo+"/replay", AdminToken, nil).JSON(t); rep["identical"] != true {
		t.Fatalf("replay: %v", rep)
	}
}
