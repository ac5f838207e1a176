package engine_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/apprun/apprun/engine"
)

// conflictingLog refuses atomic appends while refuse is set: every append
// (refuseAll) or those of several entries (refuseBatches), as a replicated
// stream refuses a check while another node's write on the subject is
// still being replicated.
type conflictingLog struct {
	Log
	refuse atomic.Int32
}

const (
	refuseNone = iota
	refuseAll
	refuseBatches
)

func (l *conflictingLog) Append(ctx context.Context, entries ...Entry) (uint64, error) {
	switch l.refuse.Load() {
	case refuseAll:
		return 0, ErrConflict
	case refuseBatches:
		if len(entries) > 1 {
			return 0, ErrConflict
		}
	}
	return l.Log.Append(ctx, entries...)
}

// pauses records the engine's pauses shorter than 100 ms: the backoffs of
// compare-and-set tries (a watch of a held run waits 250 ms).
type pauses struct {
	mu sync.Mutex
	n  int
}

func (p *pauses) sleep(d time.Duration) {
	if d < 100*time.Millisecond {
		p.mu.Lock()
		p.n++
		p.mu.Unlock()
	}
}

func (p *pauses) reset() { p.mu.Lock(); p.n = 0; p.mu.Unlock() }
func (p *pauses) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// wantPaced: of 64 tries (maxCASRetries) the first 5 go at once
// (casPauseAfter), each later one after a pause.
const wantPaced = 64 - 5

// Every compare-and-set loop whose write keeps being refused pauses between
// its later tries instead of spending all of them at once: a cluster test
// under a CPU hog saw a cancel answer "run busy" while another node's
// write on the run was being replicated, and every other loop on a shared
// subject (the account, its keys, its endpoints, an Idempotency-Key, a
// purchase) meets the same refusal.
func TestEveryCompareAndSetLoopPausesBetweenRefusedTries(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(ctx context.Context, e *Engine, acct NewAccount) // before the refusals
		do    func(ctx context.Context, e *Engine, acct NewAccount) error
		want  string
	}{
		{name: "grant", want: "account busy", do: func(ctx context.Context, e *Engine, a NewAccount) error {
			_, _, err := e.GrantCredits(ctx, a.AccountID, 5)
			return err
		}},
		{name: "key", want: "contention", do: func(ctx context.Context, e *Engine, a NewAccount) error {
			_, err := e.CreateKey(ctx, a.AccountID, "second")
			return err
		}},
		{name: "endpoint", want: "endpoints busy", do: func(ctx context.Context, e *Engine, a NewAccount) error {
			_, err := e.AddWebhookEndpoint(ctx, a.AccountID, "https://hooks.example.com/apprun")
			return err
		}},
		{name: "secret", want: "secret busy", do: func(ctx context.Context, e *Engine, a NewAccount) error {
			_, err := e.WebhookSecret(ctx, a.AccountID)
			return err
		}},
		{name: "idempotency", want: "contended", do: func(ctx context.Context, e *Engine, a NewAccount) error {
			_, err := e.CreateRun(ctx, CreateRunRequest{AccountID: a.AccountID, KeyID: a.KeyID, AppSlug: "ok",
				Input: map[string]any{}, IdempotencyKey: "k1", BodyHash: "h"})
			return err
		}},
		{name: "purchase", want: "account busy", do: func(ctx context.Context, e *Engine, a NewAccount) error {
			_, err := e.GrantPurchase(ctx, purchase(a.AccountID, "cs_paced"))
			return err
		}},
		{name: "purchase refund", want: "busy",
			setup: func(ctx context.Context, e *Engine, a NewAccount) {
				if _, err := e.GrantPurchase(ctx, purchase(a.AccountID, "cs_paced")); err != nil {
					t.Error(err)
				}
			},
			do: func(ctx context.Context, e *Engine, a NewAccount) error {
				_, err := e.RevokeRefunded(ctx, "pi_cs_paced", 500)
				return err
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			refusing := &conflictingLog{}
			var p pauses
			e := startEngineConfig(t, false, Limits{}, func(l Log) Log { refusing.Log = l; return refusing },
				func(cfg *Config) { cfg.Sleep = p.sleep }, okApp())
			ctx := context.Background()
			acct, err := e.OpenAccount(ctx, "a@example.com", 100)
			if err != nil {
				t.Fatal(err)
			}
			if c.setup != nil {
				c.setup(ctx, e, acct)
			}
			p.reset()
			refusing.refuse.Store(refuseAll)
			err = c.do(ctx, e, acct)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("refused every time: %v, want %q", err, c.want)
			}
			if n := p.count(); n < wantPaced {
				t.Fatalf("paused %d times in 64 refused tries, want a pause before each try after the 5th", n)
			}
		})
	}
}

// A cancel whose write keeps being refused pauses between its later tries
// (the cluster test's "run busy").
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
	refusing := &conflictingLog{}
	var p pauses
	e := startEngineConfig(t, false, Limits{}, func(l Log) Log { refusing.Log = l; return refusing },
		func(c *Config) { c.Sleep = p.sleep }, held)
	ctx := context.Background()
	acct, err := e.OpenAccount(ctx, "a@example.com", 100)
	if err != nil {
		t.Fatal(err)
	}
	run, err := e.CreateRun(ctx, CreateRunRequest{AccountID: acct.AccountID, KeyID: acct.KeyID, AppSlug: "held", Input: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	p.reset()
	refusing.refuse.Store(refuseBatches)
	_, _, err = e.CancelRun(ctx, acct.AccountID, run.RunNo)
	if err == nil || !strings.Contains(err.Error(), "run busy") {
		t.Fatalf("a cancel refused every time: %v, want run busy", err)
	}
	if n := p.count(); n < wantPaced {
		t.Fatalf("the cancel paused %d times in its 64 refused tries, want a pause before each try after the 5th", n)
	}
}

// An executor whose finishing write keeps being refused pauses between its
// later tries before it gives the run back to the queue.
func TestAFinishPausesBetweenRefusedTries(t *testing.T) {
	t.Parallel()
	refusing := &conflictingLog{}
	var p pauses
	finished := make(chan struct{}, 1)
	app := App{Slug: "quick", Name: "quick", Price: 5, Runnable: true, InputSchema: []byte(`{"type":"object"}`),
		Executor: ExecutorFunc(func(ctx context.Context, job Job, progress func(Step)) (Result, error) {
			if refusing.refuse.CompareAndSwap(refuseNone, refuseBatches) { // the first delivery only
				p.reset()
				finished <- struct{}{}
			}
			return Result{Summary: "done"}, nil
		})}
	e := startEngineConfig(t, false, Limits{}, func(l Log) Log { refusing.Log = l; return refusing },
		func(c *Config) { c.Sleep = p.sleep }, app)
	ctx := context.Background()
	acct, err := e.OpenAccount(ctx, "a@example.com", 100)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateRun(ctx, CreateRunRequest{AccountID: acct.AccountID, KeyID: acct.KeyID, AppSlug: "quick", Input: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	<-finished
	deadline := time.Now().Add(10 * time.Second)
	for p.count() < wantPaced && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := p.count(); n < wantPaced {
		t.Fatalf("the finish paused %d times in its refused tries, want a pause before each try after the 5th", n)
	}
}
