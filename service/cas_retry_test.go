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

// How a paced service's log refuses appends, as a replicated stream refuses
// a check while another node's write on the subject is still being
// replicated: none, every append, or those of several entries.
const (
	refuseNone = iota
	refuseAll
	refuseBatches
)

// pauses counts the service's pauses shorter than 100 ms: the backoffs of
// compare-and-set tries (a watch of a held run waits 250 ms).
type pauses struct {
	mu      sync.Mutex
	n       int
	target  int
	reached chan struct{}
}

func (p *pauses) sleep(d time.Duration) {
	if d >= 100*time.Millisecond {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if p.n == p.target {
		close(p.reached)
	}
}

// reset counts again from 0; the channel closes at the target'th pause.
func (p *pauses) reset(target int) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n, p.target, p.reached = 0, target, make(chan struct{})
	return p.reached
}

func (p *pauses) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// wantPaced: of 64 tries (maxCASRetries) the first 5 go at once
// (casPauseAfter), each later one after a pause.
const wantPaced = 64 - 5

// paced is a service whose log refuses appends as mode says and whose
// pauses are counted, with an account of 100 Credits.
type paced struct {
	*service.Service
	mode   *atomic.Int32
	pauses *pauses
	acct   service.NewAccount
}

func startPaced(t *testing.T, app engine.App) paced {
	t.Helper()
	pc := paced{mode: &atomic.Int32{}, pauses: &pauses{}}
	refusing := &recordingLog{refuse: func(entries []port.Entry) error {
		if m := pc.mode.Load(); m == refuseAll || (m == refuseBatches && len(entries) > 1) {
			return port.ErrConflict
		}
		return nil
	}}
	pc.Service = startEngineConfig(t, false, engine.Limits{}, func(l port.Log) port.Log { refusing.Log = l; return refusing },
		func(c *service.Config) { c.Sleep = pc.pauses.sleep }, app)
	var err error
	if pc.acct, err = pc.OpenAccount(context.Background(), "a@example.com", 100, ledger.By{Actor: "system:test", Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	return pc
}

func (pc paced) createRun(t *testing.T, slug string) service.CreatedRun {
	t.Helper()
	run, err := pc.CreateRun(context.Background(), service.CreateRunRequest{AccountID: pc.acct.AccountID, KeyID: pc.acct.KeyID,
		AppSlug: slug, Input: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// refusedThroughout runs do with every write of the given mode refused and
// wants its error to name want and its later tries to have paused.
func (pc paced) refusedThroughout(t *testing.T, mode int32, want string, do func(ctx context.Context) error) {
	t.Helper()
	pc.pauses.reset(wantPaced)
	pc.mode.Store(mode)
	err := do(context.Background())
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("refused every time: %v, want %q", err, want)
	}
	if n := pc.pauses.count(); n < wantPaced {
		t.Fatalf("paused %d times in 64 refused tries, want a pause before each try after the 5th", n)
	}
}

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
		setup func(ctx context.Context, pc paced) error // before the refusals
		do    func(ctx context.Context, pc paced) error
		want  string
	}{
		{name: "grant", want: "account busy", do: func(ctx context.Context, pc paced) error {
			_, _, err := pc.GrantCredits(ctx, pc.acct.AccountID, 5, ledger.By{Actor: "system:test", Reason: "test"})
			return err
		}},
		{name: "key", want: "contention", do: func(ctx context.Context, pc paced) error {
			_, err := pc.CreateKey(ctx, pc.acct.AccountID, "second")
			return err
		}},
		{name: "endpoint", want: "endpoints busy", do: func(ctx context.Context, pc paced) error {
			_, err := pc.AddWebhookEndpoint(ctx, pc.acct.AccountID, "https://hooks.example.com/apprun")
			return err
		}},
		{name: "secret", want: "secret busy", do: func(ctx context.Context, pc paced) error {
			_, err := pc.WebhookSecret(ctx, pc.acct.AccountID)
			return err
		}},
		{name: "admission", want: "contention on this account", do: func(ctx context.Context, pc paced) error {
			_, err := pc.CreateRun(ctx, service.CreateRunRequest{AccountID: pc.acct.AccountID, KeyID: pc.acct.KeyID, AppSlug: "ok", Input: map[string]any{}})
			return err
		}},
		// A key's record is written in the admission's batch alone: the
		// same loop.
		{name: "admission with a key", want: "contention on this account", do: func(ctx context.Context, pc paced) error {
			_, err := pc.CreateRun(ctx, service.CreateRunRequest{AccountID: pc.acct.AccountID, KeyID: pc.acct.KeyID, AppSlug: "ok",
				Input: map[string]any{}, IdempotencyKey: "k1"})
			return err
		}},
		{name: "purchase", want: "account busy", do: func(ctx context.Context, pc paced) error {
			_, err := pc.GrantPurchase(ctx, purchase(pc.acct.AccountID, "cs_paced"))
			return err
		}},
		{name: "purchase refund", want: "busy",
			setup: func(ctx context.Context, pc paced) error {
				_, err := pc.GrantPurchase(ctx, purchase(pc.acct.AccountID, "cs_paced"))
				return err
			},
			do: func(ctx context.Context, pc paced) error {
				_, err := pc.RevokeRefunded(ctx, "pi_cs_paced", 500)
				return err
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			pc := startPaced(t, okApp())
			if c.setup != nil {
				if err := c.setup(context.Background(), pc); err != nil {
					t.Fatal(err)
				}
			}
			pc.refusedThroughout(t, refuseAll, c.want, func(ctx context.Context) error { return c.do(ctx, pc) })
		})
	}
}

// A cancel whose write keeps being refused pauses between its later tries
// (the cluster test's "run busy").
func TestACancelPausesBetweenRefusedTries(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	held := engine.App{Slug: "held", Name: "held", Price: 5, Runnable: true, InputSchema: []byte(`{"type":"object"}`),
		Executor: engine.Executor(func(ctx context.Context, job engine.Job, progress func(engine.Step)) (engine.Result, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return engine.Result{}, ctx.Err()
		})}
	pc := startPaced(t, held)
	run := pc.createRun(t, "held")
	pc.refusedThroughout(t, refuseBatches, "run busy", func(ctx context.Context) error {
		_, _, err := pc.CancelRun(ctx, pc.acct.AccountID, run.RunNo)
		return err
	})
}

// An executor whose finishing write keeps being refused pauses between its
// later tries before it gives the run back to the queue.
func TestAFinishPausesBetweenRefusedTries(t *testing.T) {
	t.Parallel()
	var pc paced
	reached := make(chan (<-chan struct{}), 1)
	app := engine.App{Slug: "quick", Name: "quick", Price: 5, Runnable: true, InputSchema: []byte(`{"type":"object"}`),
		Executor: engine.Executor(func(ctx context.Context, job engine.Job, progress func(engine.Step)) (engine.Result, error) {
			if pc.mode.CompareAndSwap(refuseNone, refuseBatches) { // the first delivery only
				reached <- pc.pauses.reset(wantPaced)
			}
			return engine.Result{Summary: "done"}, nil
		})}
	pc = startPaced(t, app)
	pc.createRun(t, "quick")
	select {
	case <-<-reached:
	case <-time.After(10 * time.Second):
		t.Fatalf("the finish paused %d times in its refused tries, want a pause before each try after the 5th", pc.pauses.count())
	}
}
