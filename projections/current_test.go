package projections_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/projections"
	"github.com/apprun/apprun/service"
)

// accountInStore is a fixture with an account of 10 Credits and a store
// that has applied it.
func accountInStore(t *testing.T) (*fixture, *projections.Store, service.NewAccount) {
	t.Helper()
	f := setup(t)
	acct, err := f.eng.OpenAccount(context.Background(), "a@example.com", 10, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	s := f.open(t)
	waitFor(t, s, acct.Seq)
	return f, s, acct
}

// behindStore is accountInStore with the store stopped: it falls behind
// from here. It is closed when the test ends.
func behindStore(t *testing.T) (*fixture, *projections.Store, service.NewAccount) {
	t.Helper()
	f, s, acct := accountInStore(t)
	t.Cleanup(func() { s.Close() })
	s.Stop()
	return f, s, acct
}

// Current reads an account as of its newest event in the log: it waits
// for the store to apply it, and when the store cannot get there in time
// the read fails as unavailable instead of answering stale.
func TestCurrentWaitsForTheLogOrAnswersUnavailable(t *testing.T) {
	t.Parallel()
	f, s, acct := behindStore(t)
	ctx := context.Background()
	if _, _, err := f.eng.GrantCredits(ctx, acct.AccountID, 5, ledger.By{Actor: "system:test", Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	cur := projections.NewCurrent(s, f.eng, noFloor, 200*time.Millisecond)
	if a, err := cur.Account(acct.AccountID); !errors.Is(err, port.ErrUnavailable) {
		t.Fatalf("read of an account the store has not caught up with: %+v %v, want unavailable", a, err)
	}
	if a, err := s.Account(acct.AccountID); err != nil || a.Balance != 10 {
		t.Fatalf("the store itself: %+v %v, want the stale balance 10", a, err)
	}
	s.Close()

	fresh := f.open(t)
	defer fresh.Close()
	cur = projections.NewCurrent(fresh, f.eng, noFloor, 5*time.Second)
	if a, err := cur.Account(acct.AccountID); err != nil || a.Balance != 15 {
		t.Fatalf("read through Current: %+v %v, want the granted balance 15", a, err)
	}
	if _, err := cur.Run("run_aaaaaaaaaaaaaaaa"); !errors.Is(err, port.ErrNotFound) {
		t.Fatalf("a run the log does not hold: %v, want not found", err)
	}
}

// electionSeqs is a log that does not answer for its first n asks, as
// during a leader election, and is not known to be down.
type electionSeqs struct {
	projections.LogSeqs
	n    atomic.Int32
	down bool
}

func (s *electionSeqs) AccountSeq(ctx context.Context, id string) (uint64, error) {
	if s.n.Add(-1) >= 0 {
		return 0, fmt.Errorf("%w: no leader", port.ErrUnavailable)
	}
	return s.LogSeqs.AccountSeq(ctx, id)
}

func (s *electionSeqs) Writable() bool { return !s.down }

// A read during a leader election waits for it (it answered 503); a read
// while the log is known to be down answers at once.
func TestCurrentWaitsThroughAnElection(t *testing.T) {
	t.Parallel()
	f, s, acct := accountInStore(t)
	defer s.Close()
	seqs := &electionSeqs{LogSeqs: f.eng}
	seqs.n.Store(3)
	if a, err := projections.NewCurrent(s, seqs, noFloor, 5*time.Second).Account(acct.AccountID); err != nil || a.Balance != 10 {
		t.Fatalf("a read through an election: %+v %v, want the account", a, err)
	}
	down := &electionSeqs{LogSeqs: f.eng, down: true}
	down.n.Store(1000)
	began := time.Now()
	if _, err := projections.NewCurrent(s, down, noFloor, 5*time.Second).Account(acct.AccountID); !errors.Is(err, port.ErrUnavailable) || time.Since(began) > time.Second {
		t.Fatalf("a read with the log known down: %v after %s, want unavailable at once", err, time.Since(began))
	}
}

// noFloor is a node that answered no write before applying it.
func noFloor() uint64 { return 0 }

// A create's answer does not wait for the read models (engine.Acknowledged
// notes it): on a standalone node (no LogSeqs) a read of the account, or
// of its runs, waits for that floor, and answers unavailable rather than
// without the run when the store cannot get there.
func TestCurrentWaitsForTheCreatesAnswered(t *testing.T) {
	t.Parallel()
	f, s, acct := behindStore(t)
	ctx := context.Background()
	run, err := f.eng.CreateRun(ctx, service.CreateRunRequest{AccountID: acct.AccountID, KeyID: acct.KeyID, AppSlug: "a", Input: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.eng.Acknowledged(); got < run.Seq {
		t.Fatalf("Acknowledged %d after a create answered at %d", got, run.Seq)
	}
	cur := projections.NewCurrent(s, nil, f.eng.Acknowledged, 200*time.Millisecond)
	if a, err := cur.Account(acct.AccountID); !errors.Is(err, port.ErrUnavailable) {
		t.Fatalf("read of an account whose create the store has not applied: %+v %v, want unavailable", a, err)
	}
	if runs, _, err := cur.RunsOf(acct.AccountID, 0, 10); !errors.Is(err, port.ErrUnavailable) {
		t.Fatalf("list of runs the store has not applied: %d runs, %v, want unavailable", len(runs), err)
	}
	s.Close()

	fresh := f.open(t)
	defer fresh.Close()
	cur = projections.NewCurrent(fresh, nil, f.eng.Acknowledged, 5*time.Second)
	if a, err := cur.Account(acct.AccountID); err != nil || a.Balance != 9 {
		t.Fatalf("read through Current: %+v %v, want the charged balance 9", a, err)
	}
	if runs, _, err := cur.RunsOf(acct.AccountID, 0, 10); err != nil || len(runs) != 1 || runs[0].RunNo != run.RunNo {
		t.Fatalf("runs through Current: %+v %v, want the new run", runs, err)
	}
}

// A write whose answer gave up waiting for the store (WaitFor failed) is
// owed: on a standalone node, whose reads wait only for the writes this
// node answered, a read after it waits for it too, and fails as
// unavailable rather than answer what the store had before the write.
func TestAWriteAnsweredBeforeTheStoreAppliedItIsWaitedFor(t *testing.T) {
	t.Parallel()
	f, s, acct := behindStore(t)
	ctx := context.Background()
	_, seq, err := f.eng.GrantCredits(ctx, acct.AccountID, 5, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	cur := projections.NewCurrent(s, nil, noFloor, 200*time.Millisecond)
	if a, err := cur.Account(acct.AccountID); err != nil || a.Balance != 10 {
		t.Fatalf("before any answer gave up on the grant: %+v %v, want the store's 10 (nothing owed yet)", a, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := cur.WaitFor(wctx, seq); err == nil {
		t.Fatal("waiting for the grant on a stopped store succeeded")
	}
	if a, err := cur.Account(acct.AccountID); !errors.Is(err, port.ErrUnavailable) {
		t.Fatalf("a read after the grant was answered: %+v %v, want unavailable, not the balance before it", a, err)
	}
}

// unansweredSeqs is a log whose leader never answers: a read that asks it
// for a run's newest event waits for the whole wait, then fails.
type unansweredSeqs struct {
	projections.LogSeqs
	asked atomic.Int32
}

func (s *unansweredSeqs) RunSeq(context.Context, string) (uint64, error) {
	s.asked.Add(1)
	return 0, fmt.Errorf("%w: no answer", port.ErrUnavailable)
}

func (s *unansweredSeqs) Writable() bool { return false }

// The event stream's heartbeat reads a run as this node applied it
// (AppliedRun): it asks the log nothing, so 50,000 streams' heartbeats do
// not queue at the log's leader, and a leader that does not answer does
// not hold up a stream's deliveries. Run, for every other reader, still
// asks.
func TestAppliedRunAsksTheLogNothing(t *testing.T) {
	t.Parallel()
	f, s, acct := accountInStore(t)
	defer s.Close()
	run, err := f.eng.CreateRun(context.Background(), service.CreateRunRequest{AccountID: acct.AccountID, KeyID: acct.KeyID, AppSlug: "a", Input: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, s, run.Seq)
	seqs := &unansweredSeqs{LogSeqs: f.eng}
	cur := projections.NewCurrent(s, seqs, noFloor, time.Second)
	if r, err := cur.AppliedRun(run.RunNo); err != nil || r.RunNo != run.RunNo || seqs.asked.Load() != 0 {
		t.Fatalf("AppliedRun: %+v %v, the log asked %d times; want the run, asked none", r, err, seqs.asked.Load())
	}
	if _, err := cur.Run(run.RunNo); !errors.Is(err, port.ErrUnavailable) || seqs.asked.Load() == 0 {
		t.Fatalf("Run with a leader that does not answer: %v, asked %d times; want unavailable after asking", err, seqs.asked.Load())
	}
}
