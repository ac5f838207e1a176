package apps_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/apprun/apprun/engine"
	. "github.com/apprun/apprun/node/nodetest"

	"github.com/apprun/apprun/apps"
	"github.com/apprun/apprun/llm/llmtest"
)

// tenApps are Apps that read no source, for the repair tests.
var tenApps = []string{"cold-email-writer", "linkedin-post-writer", "objection-handler", "prospect-reply-writer", "x-thread-writer",
	"ad-copy-variants", "faq-schema-writer", "elevator-pitch-writer", "press-release-writer", "glossary-builder"}

// messy is an App's example output as real models send it: with prose
// around it, in a code fence, and without a required member the model
// writes (one the App does not set itself); the member's name too.
type messy struct {
	input                        map[string]any
	good, prose, fenced, missing string
	member                       string
}

func messyReplies(t *testing.T, d apps.Definition) messy {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal(d.Examples[0].Output, &out); err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(d.OutputSchema, &schema)
	set := d.Steps[len(d.Steps)-1].Model.Set
	m := messy{input: d.Examples[0].Input, good: string(d.Examples[0].Output)}
	for _, r := range schema.Required {
		if _, bySet := set[r]; !bySet {
			m.member = r
			break
		}
	}
	delete(out, m.member)
	short, _ := json.Marshal(out)
	m.prose = "Sure! Here is the JSON you asked for:\n" + m.good + "\nLet me know if you want changes."
	m.fenced = "```json\n" + m.good + "\n```"
	m.missing = string(short)
	return m
}

func definitions(t *testing.T) map[string]apps.Definition {
	t.Helper()
	list, err := apps.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]apps.Definition{}
	for _, d := range list {
		out[d.Slug] = d
	}
	return out
}

// repairSteps counts the repair steps a run's stream showed.
func repairSteps(evs []SSEEvent) int {
	n := 0
	for _, ev := range evs {
		if ev.Event == "tool_running" && ev.Data["tool"] == engine.ToolRepairReply {
			n++
		}
	}
	return n
}

// Against a model that answers with prose around the JSON, then in a
// code fence, then without a required member and, asked to repair it,
// with the whole object: each of 10 Apps completes, the last after one
// repair that its stream shows.
func TestTenAppsCompleteThroughMessyRepliesAndARepair(t *testing.T) {
	t.Parallel()
	defs := definitions(t)
	fake := llmtest.New()
	defer fake.Close()
	h := Start(t, WithLimits(NoLimits), WithModel(fake))
	a := h.Account(100_000)
	var paid int64
	for _, slug := range tenApps {
		d := defs[slug]
		m := messyReplies(t, d)
		for _, tc := range []struct {
			name    string
			replies []string
			calls   int
		}{
			{"prose around the JSON", []string{m.prose}, 1},
			{"a fenced object", []string{m.fenced}, 1},
			{"missing " + m.member + ", then corrected", []string{m.missing, m.good}, 2},
		} {
			before := len(fake.Received())
			for _, r := range tc.replies {
				fake.Script(llmtest.Reply{Text: r})
			}
			runNo := h.Create(a, map[string]any{"app_slug": slug, "input": m.input})
			evs := h.Collect(a, runNo)
			run := h.WaitRun(a, runNo)
			if run["status"] != "completed" {
				t.Fatalf("%s, %s: run %v", slug, tc.name, run)
			}
			paid += d.Price
			if n := len(fake.Received()) - before; n != tc.calls {
				t.Fatalf("%s, %s: %d model calls, want %d", slug, tc.name, n, tc.calls)
			}
			if got, want := repairSteps(evs), tc.calls-1; got != want {
				t.Fatalf("%s, %s: %d repair steps on the stream, want %d", slug, tc.name, got, want)
			}
			usage, _ := run["usage"].(map[string]any)
			if usage["model_calls"] != float64(tc.calls) {
				t.Fatalf("%s, %s: usage %v, want %d model calls", slug, tc.name, usage, tc.calls)
			}
			if tc.calls == 2 {
				repair := fake.Received()[len(fake.Received())-1]
				if !strings.Contains(repair.User(), "missing `"+m.member+"`") {
					t.Fatalf("%s: the repair call did not say what was missing:\n%s", slug, repair.User())
				}
			}
		}
	}
	if bal, active := h.Balance(a); bal != 100_000-paid || active != 0 {
		t.Fatalf("balance %d (%d active), want 100000 - %d", bal, active, paid)
	}
}

// Against a model that never corrects its reply: each of the 10 Apps
// fails after exactly one repair, says what was missing in words, shows
// the repair on its stream, and is refunded.
func TestAReplyThatIsNeverCorrectedFailsAfterOneRepairAndIsRefunded(t *testing.T) {
	t.Parallel()
	defs := definitions(t)
	fake := llmtest.New()
	defer fake.Close()
	h := Start(t, WithLimits(NoLimits), WithModel(fake))
	a := h.Account(10_000)
	for _, slug := range tenApps {
		m := messyReplies(t, defs[slug])
		fake.Script(llmtest.Reply{Text: m.missing}, llmtest.Reply{Text: m.missing})
		before := len(fake.Received())
		runNo := h.Create(a, map[string]any{"app_slug": slug, "input": m.input})
		evs := h.Collect(a, runNo)
		h.FailedWith(a, runNo, "model_reply_invalid", 10_000)
		if n := len(fake.Received()) - before; n != 2 {
			t.Fatalf("%s: %d model calls, want the reply and exactly 1 repair", slug, n)
		}
		if got := repairSteps(evs); got != 1 {
			t.Fatalf("%s: %d repair steps on the stream, want 1", slug, got)
		}
		failed := evs[len(evs)-1].Data["error"].(map[string]any)
		want := fmt.Sprintf("The model's reply did not match this App's output: missing `%s`.", m.member)
		if failed["message"] != want || failed["details"] == "" {
			t.Fatalf("%s: failed with %v, want the message %q and details", slug, failed, want)
		}
	}
}
