package service_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apprun/apprun/engine"

	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service"
)

// lastCountingLog counts the reads of the newest message of the subjects
// that begin with prefix.
type lastCountingLog struct {
	port.Log
	prefix string
	n      atomic.Int64
}

func (l *lastCountingLog) Last(ctx context.Context, subject string) (port.Message, error) {
	if strings.HasPrefix(subject, l.prefix) {
		l.n.Add(1)
	}
	return l.Log.Last(ctx, subject)
}

// A run's finish takes the account from the cache, as its admission does:
// no read of the account from the log from the create to the run's end.
// (The App waits for the create's answer: an App that ends before it
// meets a cache without the admission, and the finish reads the log.)
func TestAFinishReadsTheAccountFromTheCache(t *testing.T) {
	t.Parallel()
	counting := &lastCountingLog{prefix: "apprun.acct."}
	answered := make(chan struct{})
	app := okApp()
	inner := app.Executor
	app.Executor = engine.Executor(func(ctx context.Context, job engine.Job, progress func(engine.Step)) (engine.Result, error) {
		<-answered
		return inner(ctx, job, progress)
	})
	e := startEngineWith(t, false, engine.Limits{OwnerActiveRuns: 3, PlatformActiveRuns: 12},
		func(l port.Log) port.Log { counting.Log = l; return counting }, app)
	acct := openAccount(t, e, 100)
	before := counting.n.Load()
	run := createOkRun(t, e, acct)
	close(answered)
	if evs := finished(t, e, run.RunNo); evs[len(evs)-1].Type != "completed" {
		t.Fatalf("run ended %q", evs[len(evs)-1].Type)
	}
	if n := counting.n.Load() - before; n != 0 {
		t.Fatalf("the finish read the account from the log %d times; the cache holds it", n)
	}
}

// A cached account that does not hold the run (another node's admission
// this node has not seen) is no reason to fail the finish: it is read
// again from the log, and the run is settled at once, its App run once
// (not failed, handed back and executed again).
func TestAFinishWithAStaleCachedAccountSettlesFromTheLog(t *testing.T) {
	t.Parallel()
	counting := &lastCountingLog{prefix: "apprun.acct."}
	var (
		e     *service.Service
		stale port.Message
		once  sync.Once
		execs atomic.Int64
	)
	app := okApp()
	inner := app.Executor
	app.Executor = engine.Executor(func(ctx context.Context, job engine.Job, progress func(engine.Step)) (engine.Result, error) {
		execs.Add(1)
		once.Do(func() { e.CacheStale(stale) }) // before the finish reads the account
		return inner(ctx, job, progress)
	})
	e = startEngineWith(t, false, engine.Limits{OwnerActiveRuns: 3, PlatformActiveRuns: 12},
		func(l port.Log) port.Log { counting.Log = l; return counting }, app)
	ctx := context.Background()
	acct := openAccount(t, e, 100)
	subject := "apprun.acct." + acct.AccountID
	var err error
	if stale, err = counting.Last(ctx, subject); err != nil { // opened: no run active
		t.Fatal(err)
	}
	stale.Subject = subject
	run := createOkRun(t, e, acct)
	if evs := finished(t, e, run.RunNo); evs[len(evs)-1].Type != "completed" {
		t.Fatalf("run ended %q", evs[len(evs)-1].Type)
	}
	if n := execs.Load(); n != 1 {
		t.Fatalf("the App ran %d times, want 1", n)
	}
	a, _, err := e.Account(ctx, acct.AccountID)
	if err != nil {
		t.Fatal(err)
	}
	if a.Active != 0 || a.Balance != 100-run.CreditCost {
		t.Fatalf("account after the run: balance %d, active %d; want %d and 0", a.Balance, a.Active, 100-run.CreditCost)
	}
}
