package engine_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/engine"
)

// Each kind of run event is its own Go type, but on the log its fields sit
// beside the common ones in one flat object, byte for byte as apprun has
// always written them: logs written before read the same, and replays
// stay identical.
func TestRunEventsKeepTheirFlatWireFormat(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 23, 12, 0, 0, 5, time.UTC)
	for _, c := range []struct {
		ev   engine.RunEvent
		wire string
	}{
		{engine.RunEvent{Type: engine.RunCreated, V: 1, At: at, RunNo: "run_a", Created: &engine.Created{AccountID: "acct_a", KeyID: "key_a",
			AppSlug: "s", Input: json.RawMessage(`{"a":1}`), BrandContextID: "bc_a", WebhookURL: "https://x.example",
			WebhookEndpoints: []string{"https://y.example"}, CreditCost: 5, Slot: 2}},
			`{"type":"created","v":1,"at":"2026-11-23T12:00:00.000000005Z","run_no":"run_a","account_id":"acct_a","key_id":"key_a","app_slug":"s","input":{"a":1},"brand_context_id":"bc_a","webhook_url":"https://x.example","webhook_endpoints":["https://y.example"],"credit_cost":5,"slot":2}`},
		{engine.RunEvent{Type: engine.RunStarted, V: 1, At: at, RunNo: "run_a"},
			`{"type":"started","v":1,"at":"2026-11-23T12:00:00.000000005Z","run_no":"run_a"}`},
		{engine.RunEvent{Type: engine.ToolRunning, V: 1, At: at, RunNo: "run_a", ToolRun: &engine.ToolRun{Step: &engine.Step{Index: 1, Total: 3, Tool: "w", Message: "m"}}},
			`{"type":"tool_running","v":1,"at":"2026-11-23T12:00:00.000000005Z","run_no":"run_a","step":{"index":1,"total":3,"tool":"w","message":"m"}}`},
		{engine.RunEvent{Type: engine.RunCompleted, V: 1, At: at, RunNo: "run_a", Completed: &engine.Completed{Summary: "s", Output: json.RawMessage(`{"o":[1]}`)}},
			`{"type":"completed","v":1,"at":"2026-11-23T12:00:00.000000005Z","run_no":"run_a","summary":"s","output":{"o":[1]}}`},
		{engine.RunEvent{Type: engine.RunFailed, V: 1, At: at, RunNo: "run_a", Failed: &engine.Failed{Error: &engine.RunError{Code: "timeout", Message: "x"}, Refunded: 5}},
			`{"type":"failed","v":1,"at":"2026-11-23T12:00:00.000000005Z","run_no":"run_a","error":{"code":"timeout","message":"x"},"refunded":5}`},
	} {
		got, err := json.Marshal(c.ev)
		if err != nil || string(got) != c.wire {
			t.Errorf("%s encodes as\n  %s (%v), want\n  %s", c.ev.Type, got, err, c.wire)
		}
		back, err := engine.DecodeRunEvent([]byte(c.wire))
		if err != nil {
			t.Fatalf("%s: %v", c.ev.Type, err)
		}
		if again, _ := json.Marshal(back); string(again) != c.wire {
			t.Errorf("%s decodes and encodes again as\n  %s", c.ev.Type, again)
		}
	}
}

// A decoded event's kind is set as its Type says, even when the log held
// none of the kind's fields (all empty, so omitted): a reader never meets
// a nil kind on an event of that kind.
func TestADecodedEventHasItsKindSet(t *testing.T) {
	t.Parallel()
	for _, typ := range []engine.RunEventType{engine.RunCreated, engine.ToolRunning, engine.RunCompleted, engine.RunFailed} {
		ev, err := engine.DecodeRunEvent([]byte(`{"type":"` + string(typ) + `","v":1,"at":"2026-11-23T12:00:00Z","run_no":"run_a"}`))
		if err != nil {
			t.Fatal(err)
		}
		set := map[engine.RunEventType]bool{engine.RunCreated: ev.Created != nil, engine.ToolRunning: ev.ToolRun != nil,
			engine.RunCompleted: ev.Completed != nil, engine.RunFailed: ev.Failed != nil}
		for k, isSet := range set {
			if isSet != (k == typ) {
				t.Errorf("a decoded %s event: its %s kind set is %v", typ, k, isSet)
			}
		}
		_ = ev.PublicData()
		_ = engine.ApplyRun(engine.Run{}, ev, 1)
	}
}

// On the wire a kind's fields sit beside the common ones and every other
// kind's, so no two may share a JSON name: encoding/json drops both
// silently when they do.
func TestEveryRunEventFieldHasAJSONNameOfItsOwn(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}
	var walk func(typ reflect.Type, in string)
	walk = func(typ reflect.Type, in string) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			if f.Anonymous {
				if f.Type.Kind() != reflect.Pointer || f.Type.Elem().Kind() != reflect.Struct {
					t.Fatalf("%s: an embedded kind is a pointer to a struct", f.Name)
				}
				walk(f.Type.Elem(), f.Name)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				t.Errorf("%s.%s has no JSON name", in, f.Name)
				continue
			}
			if other, ok := seen[name]; ok {
				t.Errorf("%s.%s and %s both encode as %q", in, f.Name, other, name)
			}
			seen[name] = in + "." + f.Name
		}
	}
	walk(reflect.TypeFor[engine.RunEvent](), "RunEvent")
	if len(seen) < 18 {
		t.Fatalf("found %d JSON names: the walk is wrong", len(seen))
	}
}

func TestARunErrorSaysItsMessageAsASentence(t *testing.T) {
	t.Parallel()
	for msg, want := range map[string]string{
		"the run exceeded the App's timeout of 15m0s": "The run exceeded the App's timeout of 15m0s.",
		"The model's reply was empty.":                "The model's reply was empty.",
		"  ":                                          "", "écrit": "Écrit.",
	} {
		if got := (&engine.RunError{Message: msg}).Sentence(); got != want {
			t.Errorf("Sentence(%q) = %q, want %q", msg, got, want)
		}
	}
}
