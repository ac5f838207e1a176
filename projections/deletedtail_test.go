package projections_test

import (
	"context"
	"testing"
	"time"

	"github.com/apprun/apprun/eventlog"
	"github.com/apprun/apprun/ledger"
)

// A log whose newest message was deleted keeps its last sequence: a store
// rebuilt from it, and one that had applied all but that message, are
// ready once nothing is pending, not waiting for ever for a sequence that
// has no message.
func TestAStoreIsReadyWhenTheLogsNewestMessageWasDeleted(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	acct, err := f.eng.OpenAccount(ctx, "a@example.com", 10, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	s := f.open(t)
	waitFor(t, s, acct.Seq)
	s.Close()
	_, seq, err := f.eng.GrantCredits(ctx, acct.AccountID, 5, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.js.Stream(ctx, eventlog.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteMsg(ctx, seq); err != nil {
		t.Fatal(err)
	}
	if info, err := st.Info(ctx); err != nil || info.State.LastSeq != seq {
		t.Fatalf("the stream's last sequence after the delete: %+v %v, want %d", info.State, err, seq)
	}
	for _, name := range []string{"resumed", "rebuilt"} {
		if name == "rebuilt" {
			f.path += ".rebuilt"
		}
		s := f.open(t)
		deadline := time.Now().Add(30 * time.Second)
		for !s.Ready() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not ready at %d, the log's last sequence %d (deleted)", name, s.Applied(), seq)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if s.Applied() >= seq {
			t.Fatalf("%s: applied %d, past the deleted %d", name, s.Applied(), seq)
		}
		s.Close()
	}
}
