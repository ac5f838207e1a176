package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/apprun/apprun/engine"
)

// refusedCancelLog refuses every atomic append while on, as a replicated
// stream refuses a check while another node's write on the subject is
// still being replicated.
type refusedCancelLog struct {
	Log
	mu sync.Mutex
	on bool
}

func (l *refusedCancelLog) Append(ctx context.Context, entries ...Entry) (uint64, error) {
	l.mu.Lock()
	refuse := l.on && len(entries) > 1
	l.mu.Unlock()
	if refuse {
		return 0, ErrConflict
	}
	return l.Log.Append(ctx, entries...)
}

// A cancel whose write keeps being refused pauses between its later tries,
// as an admission does, instead of spending all of them at once: a cluster
// test under load saw a cancel answer "run busy" while another node's write
// on the run was being replicated.
func TestACancelPausesBetweenRefusedTries(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	held := App{Slug: "held", Name: "held", Price: 5, Runnable: true, InputSchema: []byte(`{"type":"object"}`),
		Executor: ExecutorFunc(func(ctx context.Context, job Job, progress func(Step)) (Result, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return Result{}, ctx.Err()
		})}
	refusing := &refusedCancelLog{}
	var mu sync.Mutex
	var slept []time.Duration
	e := startEngineConfig(t, false, Limits{}, func(l Log) Log { refusing.Log = l; return refusing },
		func(c *Config) {
			c.Sleep = func(d time.Duration) { mu.Lock(); slept = append(slept, d); mu.Unlock() }
		}, held)
	ctx := context.Background()
	acct, err := e.OpenAccount(ctx, "a@example.com", 100)
	if err != nil {
		t.Fatal(err)
	}
	run, err := e.CreateRun(ctx, CreateRunRequest{AccountID: acct.AccountID, KeyID: acct.KeyID, AppSlug: "held", Input: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	slept = nil
	mu.Unlock()
	refusing.mu.Lock()
	refusing.on = true
	refusing.mu.Unlock()
	_, _, err = e.CancelRun(ctx, acct.AccountID, run.RunNo)
	if err == nil || !strings.Contains(err.Error(), "run busy") {
		t.Fatalf("a cancel refused every time: %v, want run busy", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(slept) < 64-5 { // maxCASRetries is 64
		t.Fatalf("the cancel paused %d times in its 64 refused tries, want a pause before each try after the 5th", len(slept))
	}
}
