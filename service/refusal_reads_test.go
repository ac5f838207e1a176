package service_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service"
	"github.com/apprun/apprun/subjects"
)

// slotReads counts the log's reads of platform slots.
type slotReads struct {
	port.Log
	n atomic.Int64
}

func (l *slotReads) Last(ctx context.Context, subject string) (port.Message, error) {
	if strings.HasPrefix(subject, subjects.SlotPrefix) {
		l.n.Add(1)
	}
	return l.Log.Last(ctx, subject)
}

// A create refused for its account's ceiling costs no read of the
// platform's slots: the charge is decided before a slot is looked for.
func TestACreateRefusedForItsAccountReadsNoSlot(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	held := engine.App{Slug: "held", Name: "held", Price: 5, Runnable: true, Timeout: time.Minute,
		InputSchema: []byte(`{"type":"object"}`),
		Executor: engine.Executor(func(ctx context.Context, job engine.Job, progress func(engine.Step)) (engine.Result, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return engine.Result{Summary: "s", Output: map[string]any{}}, nil
		})}
	var log *slotReads
	e := startEngineWith(t, true, engine.Limits{OwnerActiveRuns: 1, PlatformActiveRuns: 1},
		func(l port.Log) port.Log { log = &slotReads{Log: l}; return log }, held)
	ctx := context.Background()
	acct, err := e.OpenAccount(ctx, "a@example.com", 100, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	req := service.CreateRunRequest{AccountID: acct.AccountID, KeyID: acct.KeyID, AppSlug: "held", Input: map[string]any{}}
	if _, err := e.CreateRun(ctx, req); err != nil {
		t.Fatal(err)
	}
	before := log.n.Load()
	for range 3 {
		if _, err := e.CreateRun(ctx, req); engine.ErrorCode(err) != engine.CodeConcurrencyLimit {
			t.Fatalf("a create past the account's ceiling: %v, want concurrency_limit", err)
		}
	}
	if n := log.n.Load() - before; n != 0 {
		t.Fatalf("3 creates refused for the account's ceiling read %d platform slots from the log, want 0", n)
	}
}
