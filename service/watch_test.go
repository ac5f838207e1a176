package service_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/service"
	"github.com/apprun/apprun/service/live"
)

// A watcher is called quiet (the event stream's heartbeat and its safety
// net) only after `idle` without an event: a run that reports progress
// more often than that costs no heartbeat (the heartbeats of 50,000
// streams were a fifth of their nodes' CPU when runs ticked every 10 s),
// and once it falls silent the heartbeats come.
func TestWatchIsQuietOnlyAfterIdleWithoutAnEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	silence := make(chan struct{})
	app := engine.App{Slug: "ticker", Name: "ticker", Price: 1, Runnable: true, Timeout: time.Minute, InputSchema: []byte(`{"type":"object"}`),
		Executor: engine.Executor(func(ctx context.Context, job engine.Job, progress func(engine.Step)) (engine.Result, error) {
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for i := 1; ; i++ {
				select {
				case <-tick.C:
					progress(engine.Step{Index: i, Total: 100_000, Tool: "t", Message: "tick"})
				case <-silence:
					<-ctx.Done()
					return engine.Result{}, ctx.Err()
				case <-ctx.Done():
					return engine.Result{}, ctx.Err()
				}
			}
		})}
	e := startEngine(t, true, engine.Limits{OwnerActiveRuns: 3, PlatformActiveRuns: 12}, app)
	if _, _, err := e.SetPrice(ctx, "ticker", 1, false, ledger.By{Actor: "system:test", Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	acct, _ := e.OpenAccount(ctx, "a@example.com", 20, ledger.By{Actor: "system:test", Reason: "test"})
	run, err := e.CreateRun(ctx, service.CreateRunRequest{AccountID: acct.AccountID, KeyID: acct.KeyID, AppSlug: "ticker", Input: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	var events, quiets atomic.Int32
	wctx, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	go func() {
		_ = e.Watch(wctx, run.RunNo, 0, 500*time.Millisecond,
			func(evs []live.StreamEvent) (bool, error) { events.Add(int32(len(evs))); return false, nil },
			func(uint64) (bool, error) { quiets.Add(1); return false, nil })
	}()
	waitUntil(t, wctx, func() bool { return events.Load() >= 60 }, "60 events")
	if n := quiets.Load(); n != 0 {
		t.Fatalf("quiet called %d times while an event came every 20 ms (idle 500 ms)", n)
	}
	close(silence)
	waitUntil(t, wctx, func() bool { return quiets.Load() >= 2 }, "two heartbeats once the run fell silent")
}

// waitUntil polls cond until it holds, failing the test when ctx ends.
func waitUntil(t *testing.T, ctx context.Context, cond func() bool, what string) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("no %s: %v", what, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
