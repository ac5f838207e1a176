package service_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"

	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service"
)

// flakyProgress fails the next progress writes: refused (unavailable) or
// stored with the answer lost (ambiguous), as during a leader election.
type flakyProgress struct {
	port.Log
	mu     sync.Mutex
	fail   []error // one per coming progress write; ErrAmbiguous stores first
	failed int
}

func (l *flakyProgress) Append(ctx context.Context, entries ...port.Entry) (uint64, error) {
	l.mu.Lock()
	var fail error
	if len(entries) == 1 && strings.Contains(string(entries[0].Data), `"tool_running"`) && len(l.fail) > 0 {
		fail, l.fail = l.fail[0], l.fail[1:]
		l.failed++
	}
	l.mu.Unlock()
	switch fail {
	case nil:
		return l.Log.Append(ctx, entries...)
	case port.ErrAmbiguous:
		if _, err := l.Log.Append(ctx, entries...); err != nil {
			return 0, err
		}
	}
	return 0, fail
}

// A progress write that fails, refused or with its answer lost, is tried
// again: the run completes in one execution with each step written once
// (a failed write used to nack the run and execute it again from step 1).
func TestAFailedProgressWriteNeverRestartsTheRun(t *testing.T) {
	t.Parallel()
	var executions atomic.Int32
	app := engine.App{Slug: "steps", Name: "steps", Price: 1, Runnable: true, Timeout: time.Minute, InputSchema: []byte(`{"type":"object"}`),
		Executor: engine.Executor(func(ctx context.Context, job engine.Job, progress func(engine.Step)) (engine.Result, error) {
			executions.Add(1)
			for i := 1; i <= 3; i++ {
				progress(engine.Step{Index: i, Total: 3, Tool: "t", Message: "step"})
			}
			return engine.Result{Summary: "done"}, nil
		})}
	flaky := &flakyProgress{fail: []error{port.ErrUnavailable, port.ErrAmbiguous, port.ErrUnavailable, port.ErrUnavailable}}
	e := startEngineWith(t, false, engine.Limits{}, func(l port.Log) port.Log { flaky.Log = l; return flaky }, app)
	ctx := context.Background()
	acct, err := e.OpenAccount(ctx, "a@example.com", 10, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	run, err := e.CreateRun(ctx, service.CreateRunRequest{AccountID: acct.AccountID, KeyID: acct.KeyID, AppSlug: "steps", Input: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	evs := finished(t, e, run.RunNo)
	steps := map[string]int{}
	for _, ev := range evs {
		if ev.Type == engine.ToolRunning {
			steps[string(ev.Data)]++
		}
	}
	if n := executions.Load(); n != 1 {
		t.Fatalf("the App ran %d times, want once", n)
	}
	if len(steps) != 3 {
		t.Fatalf("progress events %v, want each of the 3 steps", steps)
	}
	for data, n := range steps {
		if n != 1 {
			t.Fatalf("step %s written %d times, want once", data, n)
		}
	}
	if last := evs[len(evs)-1]; last.Type != engine.RunCompleted {
		t.Fatalf("the run ended %s, want completed", last.Type)
	}
	if flaky.failed != 4 {
		t.Fatalf("%d progress writes failed, want the 4 injected", flaky.failed)
	}
}

// refusingLog refuses the next n admission batches outright (nothing
// stored), as a stream does during a leader election.
type refusingLog struct {
	port.Log
	mu sync.Mutex
	n  int
}

func (l *refusingLog) Append(ctx context.Context, entries ...port.Entry) (uint64, error) {
	l.mu.Lock()
	refuse := len(entries) > 1 && l.n > 0
	if refuse {
		l.n--
	}
	l.mu.Unlock()
	if refuse {
		return 0, port.ErrUnavailable
	}
	return l.Log.Append(ctx, entries...)
}

// A create whose batch the log refuses during an election is tried again
// within the request: it answers with the run (it answered 503), charged
// once.
func TestAnAdmissionRefusedDuringAnElectionIsTriedAgain(t *testing.T) {
	t.Parallel()
	refusing := &refusingLog{}
	e := startEngineWith(t, false, engine.Limits{OwnerActiveRuns: 3, PlatformActiveRuns: 12},
		func(l port.Log) port.Log { refusing.Log = l; return refusing }, okApp())
	ctx := context.Background()
	acct, err := e.OpenAccount(ctx, "a@example.com", 100, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	refusing.mu.Lock()
	refusing.n = 2
	refusing.mu.Unlock()
	run, err := e.CreateRun(ctx, service.CreateRunRequest{AccountID: acct.AccountID, KeyID: acct.KeyID, AppSlug: "ok", Input: map[string]any{}})
	if err != nil {
		t.Fatalf("a create refused twice by the log: %v, want the run", err)
	}
	finished(t, e, run.RunNo)
	a, _, err := e.Account(ctx, acct.AccountID)
	if err != nil || a.Balance != 100-run.CreditCost {
		t.Fatalf("balance %d (%v), want one charge of %d", a.Balance, err, run.CreditCost)
	}
}
