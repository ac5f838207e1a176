package engine_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
)

// A log written before cancels became failures holds "canceled" events.
// Every reader gets the failed event a cancel writes now, so a replayed
// history streams, folds and audits with the spec's four kinds.
func TestAnOldCanceledEventReadsAsAFailedEventWithTheCodeCanceled(t *testing.T) {
	old := []byte(`{"type":"canceled","v":1,"at":"2026-10-01T10:00:00Z","run_no":"run_a","refunded":10}`)
	ev, err := engine.DecodeRunEvent(old)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Type != engine.RunFailed || ev.Failed.Error == nil || ev.Failed.Error.Code != engine.FailCanceled || ev.Failed.Refunded != 10 {
		t.Fatalf("decoded %+v, want a failed event with the code canceled and the refund", ev)
	}
	if !ev.Type.Terminal() {
		t.Fatal("the upgraded event does not end the run")
	}
	created := engine.RunEvent{Type: engine.RunCreated, V: 1, RunNo: "run_a", At: time.Unix(0, 0), Created: &engine.Created{AccountID: "acct_a", CreditCost: 10}}
	run := engine.ApplyRun(engine.ApplyRun(engine.Run{}, created, 1), ev, 2)
	if run.Status != engine.StatusFailed || !run.Canceled() || run.Refunded != 10 {
		t.Fatalf("folded %+v, want failed, canceled, 10 refunded", run)
	}
	if d := ev.PublicData(); d.Status != engine.StatusFailed || d.Error == nil || d.Error.Code != engine.FailCanceled || d.Refund == nil || d.Refund.Credits != 10 {
		t.Fatalf("streamed data %+v", d)
	}

	a := engine.NewAudit(nil)
	for i, m := range []struct {
		subject string
		v       any
	}{
		{"apprun.acct.acct_a", ledger.Event{Type: ledger.AccountOpened, V: 1, AccountID: "acct_a", Amount: 100, Balance: 100}},
		{"apprun.acct.acct_a", ledger.Event{Type: ledger.RunCharged, V: 1, AccountID: "acct_a", Amount: -10, RunNo: "run_a", Balance: 90, Active: 1}},
		{"apprun.run.run_a", created},
	} {
		a.Apply(m.subject, uint64(i+1), mustJSON(t, m.v))
	}
	a.Apply("apprun.run.run_a", 4, old)
	a.Apply("apprun.acct.acct_a", 5, mustJSON(t, ledger.Event{Type: ledger.RunRefunded, V: 1, AccountID: "acct_a", Amount: 10, RunNo: "run_a", Balance: 100}))
	rep := a.Report()
	if len(rep.Violations) > 0 || rep.Failed != 1 || rep.Canceled != 1 || rep.Runs["run_a"] != engine.StatusFailed {
		t.Fatalf("audit %+v", rep)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
