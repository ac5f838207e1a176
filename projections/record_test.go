package projections

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	gojson "github.com/goccy/go-json"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
)

// The read models encode their records with goccy/go-json (putJSON), and
// read them, and every file written before, with encoding/json. Whatever
// an event holds, the record it makes must be the bytes encoding/json
// would have written: a rebuilt file is the file the node wrote live, and
// a file from an older binary reads the same.
func FuzzRecordEncodersAgree(f *testing.F) {
	at := time.Date(2026, 11, 23, 12, 0, 0, 123456789, time.UTC)
	seeds := []any{
		engine.RunEvent{Type: engine.RunCreated, V: 1, RunNo: "run_a", AccountID: "acct_a", KeyID: "key_a", AppSlug: "cold-email-writer",
			Input: json.RawMessage(`{"a":"é\u2028<>&","n":1.5e3}`), CreditCost: 25, At: at, Slot: 3, WebhookEndpoints: []string{"https://h.example/x?a=1&b=<2>"}},
		engine.RunEvent{Type: engine.RunCompleted, V: 1, RunNo: "run_a", At: at, Summary: "ok <b>&</b> \u2029",
			Output: json.RawMessage(`{"emails": [ {"b":"\n<>&\u2028 é"} ],"n": 1.50}`)},
		engine.RunEvent{Type: engine.RunFailed, V: 1, RunNo: "run_a", At: at, Error: &engine.RunError{Code: "timeout", Message: "m <&>"}, Refunded: 25},
		ledger.Event{Type: ledger.AccountOpened, V: 1, At: at, AccountID: "acct_a", Balance: 100},
		ledger.Event{Type: ledger.RunCharged, V: 1, At: at, AccountID: "acct_a", RunNo: "run_a", Amount: -25, Balance: 75},
	}
	for _, s := range seeds {
		data, err := json.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"type":"completed","output":{"x":"\ud800 \u00e9 \/"},"summary":"\u003c"}`))
	f.Add([]byte(`{"type":"created","input":[1, 2.0e+10, -0, "\t"],"at":"2026-11-23T12:00:00+02:00"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if ev, err := engine.DecodeRunEvent(data); err == nil {
			created := ev
			created.Type = engine.RunCreated
			r := engine.ApplyRun(engine.ApplyRun(engine.Run{}, created, 1), ev, 2)
			encodersAgree(t, data, r)
			if r.FinishedAt != nil {
				encodersAgree(t, data, engine.FinishedRun{RunNo: r.RunNo, AccountID: r.AccountID, AppSlug: r.AppSlug,
					Status: r.Status, CreditCost: r.CreditCost, FinishedAt: *r.FinishedAt})
			}
		}
		var ev ledger.Event
		if json.Unmarshal(data, &ev) == nil {
			encodersAgree(t, data, ledger.Snapshot(ev, ledger.Account{}))
			if line, ok := ledger.LineOf(ev); ok {
				encodersAgree(t, data, line)
			}
		}
	})
}

func encodersAgree(t *testing.T, data []byte, v any) {
	t.Helper()
	want, werr := json.Marshal(v)
	got, gerr := gojson.Marshal(v)
	if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
		t.Fatalf("from %q, %T: goccy %s (%v), encoding/json %s (%v)", data, v, got, gerr, want, werr)
	}
}
