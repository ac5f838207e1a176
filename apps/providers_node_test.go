package apps_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/apprun/apprun/engine"
	. "github.com/apprun/apprun/node/nodetest"

	"github.com/apprun/apprun/llm/llmtest"
)

// threeApps run end to end against every provider's fake.
var threeApps = []string{"cold-email-writer", "linkedin-post-writer", "objection-handler"}

// Each provider apprun documents, played by a fake that follows its wire
// differences (address, key header, chunk shapes, usage or none, strict
// mode taken, ignored or refused), runs three Apps end to end, streamed
// and not, and the run shows the usage the provider reported.
func TestEveryProviderRunsThreeAppsEndToEnd(t *testing.T) {
	t.Parallel()
	defs := definitions(t)
	for _, p := range llmtest.Profiles {
		for _, noStream := range []bool{false, true} {
			name := p.Name
			if noStream {
				name += ", not streamed"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				fake := llmtest.NewProvider(p)
				defer fake.Close()
				h := Start(t, WithLimits(NoLimits), WithProvider(fake, noStream))
				a := h.Account(1000)
				for _, slug := range threeApps {
					ex := defs[slug].Examples[0]
					fake.Script(llmtest.Reply{Text: string(ex.Output), Chunks: 5})
					run := h.WaitRun(a, h.Create(a, map[string]any{"app_slug": slug, "input": ex.Input}))
					if run["status"] != "completed" {
						t.Fatalf("%s: run %v", slug, run)
					}
					usage, _ := run["usage"].(map[string]any)
					_, tokens := usage["tokens"]
					if usage["model_calls"] != float64(1) || tokens != (p.Usage != llmtest.UsageNever) {
						t.Fatalf("%s: usage %v; the provider reports tokens: %v", slug, usage, p.Usage != llmtest.UsageNever)
					}
				}
				for _, r := range fake.Received() {
					if r.Stream == noStream {
						t.Fatalf("a request with stream %v", r.Stream)
					}
				}
			})
		}
	}
}

// Against a provider that refuses strict mode, auto falls back once, to
// json_object, and later runs ask that way from the start; the record
// says which mode each call used.
func TestAutoFallsBackOnceForTheNode(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewProvider(llmtest.LlamaCpp)
	defer fake.Close()
	h := Start(t, WithLimits(NoLimits), WithModel(fake))
	a := h.Account(1000)
	var last string
	for range 3 {
		fake.Script(llmtest.Reply{Text: ModelSequence})
		last = h.Create(a, ColdEmailRun())
		if run := h.WaitRun(a, last); run["status"] != "completed" {
			t.Fatalf("run %v", run)
		}
	}
	var formats []string
	for _, r := range fake.Received() {
		formats = append(formats, r.Format())
	}
	if strings.Join(formats, ",") != "json_schema,json_object,json_object,json_object" {
		t.Fatalf("formats asked: %v, want one strict request refused, then json_object", formats)
	}
	rec := h.Do("GET", "/api/v1/runs/"+last+"/record", a.Key, nil)
	if rec.Status != http.StatusOK || !strings.Contains(string(rec.Body), `"json_mode":"json_object"`) {
		t.Fatalf("record %d: %.400s", rec.Status, rec.Body)
	}
}

// A 500 storm: the stream says the run waits on the model, with the
// attempt and the wait, whether the provider comes back or not.
func TestA500StormShowsWaitsOnTheStream(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		script []llmtest.Reply
		ends   string
	}{
		{"it comes back", []llmtest.Reply{{Status: 500}, {Status: 502}, {Text: ModelSequence}}, "completed"},
		{"it does not", []llmtest.Reply{{Status: 500}, {Status: 500}, {Status: 503}}, "failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := llmtest.New()
			defer fake.Close()
			fake.Script(tc.script...)
			h := Start(t, WithLimits(NoLimits), WithModel(fake))
			a := h.Account(100)
			evs := h.Collect(a, h.Create(a, ColdEmailRun()))
			var waits []string
			for _, ev := range evs {
				if ev.Event == "tool_running" && ev.Data["tool"] == engine.ToolWaitingForModel {
					waits = append(waits, ev.Data["message"].(string))
				}
			}
			// Attempts 20 ms apart, a wait said at most every 2 s: the first.
			if len(waits) != 1 || waits[0] != "Waiting for the model: attempt 2 of 3, retrying in 1 s (the provider answered 500)" {
				t.Fatalf("waits on the stream: %q", waits)
			}
			end := evs[len(evs)-1]
			if end.Event != tc.ends {
				t.Fatalf("ended with %s %v", end.Event, end.Data)
			}
			if tc.ends == "failed" {
				e := end.Data["error"].(map[string]any)
				if e["code"] != "model_unavailable" || e["message"] != "The model provider did not answer after 3 attempts (the last: 503, service unavailable)." {
					t.Fatalf("failed with %v", e)
				}
			}
		})
	}
}
