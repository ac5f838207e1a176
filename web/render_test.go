package web

import (
	"encoding/json"
	"strings"
	"testing"
)

// The generic renderer: members in the schema's order, lists, tables for
// small flat objects, cards for larger ones, a copy button on long text,
// and every value escaped.
func TestRenderOutputFollowsTheSchemaAndEscapes(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"headline":{"type":"string"},"scores":{"type":"object"},
		"fixes":{"type":"array","items":{"type":"object","properties":{"priority":{},"issue":{},"fix":{}}}},
		"notes":{"type":"array","items":{"type":"string"}},"body":{"type":"string"}}}`)
	var out any
	_ = json.Unmarshal([]byte(`{"body":"`+strings.Repeat("long text ", 12)+`","notes":["a","b"],
		"fixes":[{"fix":"Say who it is for","issue":"<script>alert(1)</script>","priority":1}],
		"scores":{"clarity":3},"headline":"Close the month in a day"}`), &out)
	got := string(renderOutput(out, schema))
	for _, want := range []string{
		`<p class="field-line"><strong>Headline:</strong> Close the month in a day</p>`,
		`<th scope="col">Priority</th><th scope="col">Issue</th><th scope="col">Fix</th>`,
		`&lt;script&gt;alert(1)&lt;/script&gt;`, `<ul class="out-list"><li>a</li><li>b</li></ul>`,
		`<button type="button" data-copy="#out-1">Copy</button>`, `<h3>Scores</h3>`,
	} {
		if !strings.Contains(got, want) {
			t.Fatalf("rendered output lacks %q:\n%s", want, got)
		}
	}
	if strings.Index(got, "Headline") > strings.Index(got, "Body") || strings.Contains(got, "<script>") {
		t.Fatalf("not in the schema's order, or not escaped:\n%s", got)
	}
}

// Cards that hold a table of their own take the full width (a week of
// days, each with a table of posts); cards of text sit side by side.
func TestCardsHoldingATableTakeTheFullWidth(t *testing.T) {
	var nested, plain any
	_ = json.Unmarshal([]byte(`{"days":[{"day":"Monday","posts":[{"network":"X","text":"a"}]},{"day":"Tuesday","posts":[{"network":"X","text":"b"}]}]}`), &nested)
	_ = json.Unmarshal([]byte(`{"posts":[{"a":"`+strings.Repeat("x", 130)+`"},{"a":"y"}]}`), &plain)
	if got := string(renderOutput(nested, nil)); !strings.Contains(got, `<div class="cards wide">`) {
		t.Fatalf("cards with tables are not full width:\n%s", got)
	}
	if got := string(renderOutput(plain, nil)); !strings.Contains(got, `<div class="cards">`) {
		t.Fatalf("cards of text are not side by side:\n%s", got)
	}
}
