package projections

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	gojson "github.com/goccy/go-json"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
)

// The read models decode the log's account and run events with
// goccy/go-json (decode.go); the engine and the audit with encoding/json.
// Whatever the bytes, both must read the same event, or goccy must refuse
// them (apply then decodes them with encoding/json).
func FuzzDecodersAgree(f *testing.F) {
	addEventSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		want, werr := engine.DecodeRunEvent(data)
		got, gerr := engine.DecodeRunEventWith(gojson.Unmarshal, data)
		if gerr == nil && (werr != nil || !reflect.DeepEqual(got, want)) {
			t.Fatalf("run event %q: goccy %+v, encoding/json %+v (%v)", data, got, want, werr)
		}
		var wa, ga ledger.Event
		werr = json.Unmarshal(data, &wa)
		if gojson.Unmarshal(data, &ga) == nil && (werr != nil || !reflect.DeepEqual(ga, wa)) {
			t.Fatalf("ledger event %q: goccy %+v, encoding/json %+v (%v)", data, ga, wa, werr)
		}
	})
}

// addEventSeeds seeds a fuzzer of the log's events with one of each kind
// the read models apply, with the characters encoders treat apart (HTML,
// U+2028, escapes, spacing in raw JSON), and a few odd ones.
func addEventSeeds(f *testing.F) {
	at := time.Date(2026, 11, 23, 12, 0, 0, 123456789, time.UTC)
	seeds := []any{
		engine.RunEvent{Type: engine.RunCreated, V: 1, RunNo: "run_a", At: at, Created: &engine.Created{AccountID: "acct_a", KeyID: "key_a", AppSlug: "cold-email-writer", Input: json.RawMessage(`{"a":"é\u2028<>&","n":1.5e3}`), CreditCost: 25, Slot: 3, WebhookEndpoints: []string{"https://h.example/x?a=1&b=<2>"}}},
		engine.RunEvent{Type: engine.ToolRunning, V: 1, RunNo: "run_a", At: at, ToolRun: &engine.ToolRun{Step: &engine.Step{Index: 2, Total: 5, Tool: "web", Message: "reading \"x\""}}},
		engine.RunEvent{Type: engine.RunCompleted, V: 1, RunNo: "run_a", At: at, Completed: &engine.Completed{Summary: "ok <b>&</b> \u2029", Output: json.RawMessage(`{"emails": [ {"b":"\n<>&\u2028 é"} ],"n": 1.50}`)}},
		engine.RunEvent{Type: engine.RunFailed, V: 1, RunNo: "run_a", At: at, Failed: &engine.Failed{Error: &engine.RunError{Code: "timeout", Message: "m <&>"}, Refunded: 25}},
		ledger.Event{Type: ledger.AccountOpened, V: 1, At: at, AccountID: "acct_a", Balance: 100},
		ledger.Event{Type: ledger.RunCharged, V: 1, At: at, AccountID: "acct_a", RunNo: "run_a", Amount: -25, Balance: 75},
		engine.KeyEvent{Type: engine.KeyCreated, V: 1, At: at, KeyID: "key_a", AccountID: "acct_a", Hash: "h", Prefix: "ak_", Name: "ci <&> é"},
		engine.BrandContextEvent{Type: "brand_context_created", V: 1, At: at, BrandContext: engine.BrandContext{ID: "bc_a", AccountID: "acct_a",
			Name: "Acme <&>", Description: "line\nbreak \u2028", Website: "https://acme.example/?a=1&b=2", CreatedAt: at}},
		engine.BrandContextEvent{Type: engine.BrandContextUpdated, V: 1, At: at, BrandContext: engine.BrandContext{ID: "bc_a", AccountID: "acct_a",
			Name: "Acme", Voice: "warm <&>", CreatedAt: at, UpdatedAt: at}},
		engine.BrandContextEvent{Type: engine.BrandContextDeleted, V: 1, At: at, BrandContext: engine.BrandContext{ID: "bc_a", AccountID: "acct_a", Name: "Acme", CreatedAt: at}},
		engine.PriceEvent{Type: "price_set", V: 1, At: at, Slug: "cold-email-writer", CreditCost: 25, Recalibrating: true},
	}
	for _, s := range seeds {
		data, err := json.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"type":"canceled","v":1,"run_no":"run_a"}`))
	f.Add([]byte(`{"type":"created","TYPE":"failed","credit_cost":1e2}`))
	f.Add([]byte(`{"type":"created","input":{"a":"\ud800"}}`))
	f.Add([]byte(`{"type":"completed","output":{"x":"\ud800 \u00e9 \/"},"summary":"\u003c"}`))
	f.Add([]byte(`{"type":"created","input":[1, 2.0e+10, -0, "\t"],"at":"2026-11-23T12:00:00+02:00"}`))
}
