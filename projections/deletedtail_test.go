package projections_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/eventlog"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/projections"
)

// A log whose newest message was deleted keeps its last sequence: a store
// rebuilt from it, and one that had applied all but that message, are
// ready once nothing is pending, not waiting for ever for a sequence that
// has no message.
func TestAStoreIsReadyWhenTheLogsNewestMessageWasDeleted(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	acct, s := f.openedAccount(t)
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

// A log that ends before what the read models applied lost its tail (a
// cut store, an older backup of it). Following it would skip every new
// write up to the old sequence and answer them as shown: the store
// stops at once, says why, and a wait for any sequence fails at once
// rather than pass on stale read models or wait for ever.
func TestAStoreStopsWhenTheLogIsShorterThanWhatItApplied(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	acct, s := f.openedAccount(t)
	s.Close()
	st, err := f.js.Stream(ctx, eventlog.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	if err := f.js.DeleteStream(ctx, eventlog.StreamName); err != nil {
		t.Fatal(err)
	}
	if _, err := f.js.CreateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}

	s = f.open(t)
	defer s.Close()
	if err := s.Failed(); !errors.Is(err, projections.ErrLogBehind) || !strings.Contains(err.Error(), fmt.Sprintf("it ends at sequence 0, but they applied it through %d", acct.Seq)) {
		t.Fatalf("read models ahead of the log: Failed() = %v", err)
	}
	if s.Ready() {
		t.Fatal("read models ahead of the log say they are ready")
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.WaitFor(wctx, 1); !errors.Is(err, projections.ErrLogBehind) {
		t.Fatalf("a wait on read models ahead of the log: %v, want ErrLogBehind at once", err)
	}
}
