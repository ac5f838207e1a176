package service_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apprun/apprun/embednats/natstest"
	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/service/live"

	"github.com/apprun/apprun/eventlog"
	"github.com/apprun/apprun/inputschema"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service"
	"github.com/apprun/apprun/webhook"
)

type brandMap struct {
	mu sync.Mutex
	m  map[string]engine.BrandContext
}

func (b *brandMap) BrandContext(_ context.Context, id string) (engine.BrandContext, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	bc, ok := b.m[id]
	if !ok {
		return engine.BrandContext{}, port.ErrNotFound
	}
	return bc, nil
}

func (b *brandMap) FinishedBefore(time.Time, int) ([]engine.FinishedRun, error) { return nil, nil }

func okApp() engine.App {
	return engine.App{Slug: "ok", Name: "ok", Price: 5, Runnable: true, InputSchema: []byte(`{"type":"object"}`),
		Executor: engine.Executor(func(ctx context.Context, job engine.Job, progress func(engine.Step)) (engine.Result, error) {
			progress(engine.Step{Index: 1, Total: 1, Tool: "t", Message: "m"})
			return engine.Result{Summary: "s", Output: map[string]any{"x": 1}}, nil
		})}
}

func newTestEngine(t *testing.T) *service.Service {
	t.Helper()
	return startEngine(t, true, engine.Limits{OwnerActiveRuns: 3, PlatformActiveRuns: 12}, okApp())
}

// startEngine runs a service on a fresh embedded JetStream (fsync on or off).
func startEngine(t testing.TB, sync bool, lim engine.Limits, apps ...engine.App) *service.Service {
	t.Helper()
	return startEngineWith(t, sync, lim, nil, apps...)
}

// startEngineWith is startEngine with the Log port wrapped by wrap.
func startEngineWith(t testing.TB, sync bool, lim engine.Limits, wrap func(port.Log) port.Log, apps ...engine.App) *service.Service {
	t.Helper()
	return startEngineConfig(t, sync, lim, wrap, nil, apps...)
}

// startEngineConfig is startEngineWith with the service's Config changed by
// configure (a clock, say).
func startEngineConfig(t testing.TB, sync bool, lim engine.Limits, wrap func(port.Log) port.Log, configure func(*service.Config), apps ...engine.App) *service.Service {
	t.Helper()
	e, err := newEngineConfig(t, sync, lim, wrap, configure, apps...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	return e
}

// newEngineConfig is startEngineConfig's service, not started, with New's
// error (a config it refuses).
func newEngineConfig(t testing.TB, sync bool, lim engine.Limits, wrap func(port.Log) port.Log, configure func(*service.Config), apps ...engine.App) (*service.Service, error) {
	t.Helper()
	nc := natstest.Connect(t, sync)
	cat, err := engine.NewCatalog(inputschema.Compile, apps...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := eventlog.Open(ctx, nc, eventlog.Config{Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	ports := st.Ports()
	if wrap != nil {
		ports.Log = wrap(ports.Log)
	}
	return engineOn(ports, cat, lim, configure)
}

// engineOn is a new service on ports (not started) with the tests' config,
// changed by configure.
func engineOn(ports port.Set, cat *engine.Catalog, lim engine.Limits, configure func(*service.Config)) (*service.Service, error) {
	cfg := service.Config{Catalog: cat, Reads: &brandMap{m: map[string]engine.BrandContext{}},
		Limits: lim, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Webhooks: service.WebhookConfig{Sender: webhook.NewSender(true)}}
	if configure != nil {
		configure(&cfg)
	}
	return service.New(ports, cfg)
}

// finished waits for a run's terminal event through a follower.
func finished(t *testing.T, e *service.Service, runNo string) []live.StreamEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f := e.Follow(runNo, 0)
	defer f.Close()
	out, err := f.Catchup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for len(out) == 0 || !out[len(out)-1].Terminal {
		select {
		case m := <-f.Live():
			evs, err := f.Receive(ctx, m)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, evs...)
		case <-ctx.Done():
			t.Fatalf("run %s did not finish: %+v", runNo, out)
		}
	}
	return out
}

// finishedOkRun opens an account, runs the ok App to its end, and returns
// the run and its streamed events.
func finishedOkRun(t *testing.T, e *service.Service) (service.CreatedRun, []live.StreamEvent) {
	t.Helper()
	run := createOkRun(t, e, openAccount(t, e, 100))
	return run, finished(t, e, run.RunNo)
}

// openAccount opens an account holding credits.
func openAccount(t *testing.T, e *service.Service, credits int64) service.NewAccount {
	t.Helper()
	acct, err := e.OpenAccount(context.Background(), "a@example.com", credits, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return acct
}

// createOkRun creates a run of the ok App on acct.
func createOkRun(t *testing.T, e *service.Service, acct service.NewAccount) service.CreatedRun {
	t.Helper()
	run, err := e.CreateRun(context.Background(), service.CreateRunRequest{AccountID: acct.AccountID, KeyID: acct.KeyID, AppSlug: "ok", Input: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func TestFollowerRecoversMissedLiveEventsFromTheLog(t *testing.T) {
	e := newTestEngine(t)
	ctx := context.Background()
	run, all := finishedOkRun(t, e)
	// A follower at the created event receives only the terminal event live:
	// its previous sequence is not the follower's, so the gap is read from the log.
	f := e.Follow(run.RunNo, run.Seq)
	defer f.Close()
	last := all[len(all)-1]
	got, err := f.Receive(ctx, service.LiveMsg(last.Seq, all[len(all)-2].Seq, last))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(all) {
		t.Fatalf("after a gap got %d events, want all %d", len(got), len(all))
	}
	for i := range all {
		if got[i].Seq != all[i].Seq {
			t.Fatalf("event %d: seq %d, want %d", i, got[i].Seq, all[i].Seq)
		}
	}
	// The same live event again is a duplicate and sends nothing.
	if again, _ := f.Receive(ctx, service.LiveMsg(last.Seq, all[len(all)-2].Seq, last)); len(again) != 0 {
		t.Fatalf("duplicate live event sent again: %+v", again)
	}
}

func TestPriceChangedDuringAdmissionIsPricingNotReady(t *testing.T) {
	e := newTestEngine(t)
	ctx := context.Background()
	acct, err := e.OpenAccount(ctx, "a@example.com", 100, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	read, err := e.CurrentPrice(ctx, "ok")
	if err != nil {
		t.Fatal(err)
	}
	// The price moves after the request read it and before it commits.
	if _, _, err := e.SetPrice(ctx, "ok", 7, false, ledger.By{Actor: "system:test", Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	runNo, err := e.AdmitAtPrice(ctx, acct.AccountID, "ok", read)
	if engine.ErrorCode(err) != engine.CodePricingNotReady {
		t.Fatalf("admission at a stale price: %v, want pricing_not_ready", err)
	}
	if after, _, _ := e.Account(ctx, acct.AccountID); after.Balance != 100 || after.Active != 0 {
		t.Fatalf("a refused admission changed the account: %+v", after)
	}
	if evs, err := e.RunLog(ctx, runNo, 0); err != nil || len(evs) != 0 {
		t.Fatalf("a refused admission wrote the run: %v %v", evs, err)
	}
}

func TestConcurrentAdmissionsNeverOverspend(t *testing.T) {
	e := newTestEngine(t)
	ctx := context.Background()
	acct, err := e.OpenAccount(ctx, "a@example.com", 12, ledger.By{Actor: "system:test", Reason: "test"}) // two runs at 5, not three
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.CreateRun(ctx, service.CreateRunRequest{AccountID: acct.AccountID, KeyID: acct.KeyID, AppSlug: "ok", Input: map[string]any{}})
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case engine.ErrorCode(err) != engine.CodeInsufficientCredits:
			t.Fatalf("unexpected refusal: %v", err)
		}
	}
	// 12 Credits afford exactly two runs at 5; completing keeps the charge.
	a, _, _ := e.Account(ctx, acct.AccountID)
	if ok != 2 || a.Balance != 2 {
		t.Fatalf("%d admitted, balance %d: want 2 admitted and 2 Credits left", ok, a.Balance)
	}
}

func TestRunInterruptedTooOftenFailsAndIsRefunded(t *testing.T) {
	ctx := context.Background()
	block, quiet, wentQuiet := make(chan struct{}), make(chan struct{}), make(chan struct{})
	defer close(block)
	// The App reports progress every 100 ms until it goes quiet, then
	// hangs: an executor alive, then one that looks dead.
	app := engine.App{Slug: "stuck", Name: "stuck", Price: 5, Runnable: true, Timeout: time.Minute, InputSchema: []byte(`{"type":"object"}`),
		Executor: engine.Executor(func(ctx context.Context, job engine.Job, progress func(engine.Step)) (engine.Result, error) {
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for i := 1; ; i++ {
				select {
				case <-tick.C:
					progress(engine.Step{Index: i, Total: 1000, Tool: "t", Message: "working"})
					continue
				case <-quiet:
				case <-ctx.Done():
					return engine.Result{}, ctx.Err()
				}
				break
			}
			close(wentQuiet) // its last progress write has returned
			select {
			case <-block:
			case <-ctx.Done():
			}
			return engine.Result{}, ctx.Err()
		})}
	e := startEngine(t, true, engine.Limits{OwnerActiveRuns: 3, PlatformActiveRuns: 12}, okApp(), app)
	if _, _, err := e.SetPrice(ctx, "stuck", 5, false, ledger.By{Actor: "system:test", Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	acct, _ := e.OpenAccount(ctx, "a@example.com", 20, ledger.By{Actor: "system:test", Reason: "test"})
	run, err := e.CreateRun(ctx, service.CreateRunRequest{AccountID: acct.AccountID, KeyID: acct.KeyID, AppSlug: "stuck", Input: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	// The first delivery is executing (and stuck); wait for its started event.
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs, err := e.RunLog(ctx, run.RunNo, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// While its executor is alive (it writes to the run's log), a delivery
	// past the last attempt leaves the run alone: a work queue that lost
	// its heartbeats must not end a healthy run.
	if err := e.ExecuteRun(ctx, run.RunNo, service.MaxAttempts+1); err == nil {
		t.Fatal("a delivery past the last attempt ended a run whose executor is alive")
	}
	if evs, _ := e.RunLog(ctx, run.RunNo, 0); evs[len(evs)-1].Event.Type.Terminal() {
		t.Fatalf("the run ended: %+v", evs[len(evs)-1].Event)
	}
	// Once its executor is silent, the delivery after the last allowed
	// attempt ends the run.
	close(quiet)
	<-wentQuiet
	if err := e.ExecuteRun(ctx, run.RunNo, service.MaxAttempts+1); err != nil {
		t.Fatal(err)
	}
	events, err := e.RunLog(ctx, run.RunNo, 0)
	if err != nil {
		t.Fatal(err)
	}
	last := events[len(events)-1].Event
	if last.Type != engine.RunFailed || last.Failed.Error == nil || last.Failed.Error.Code != engine.FailInterrupted || last.Failed.Refunded != 5 {
		t.Fatalf("last event %+v, want failed/interrupted with a refund of 5", last)
	}
	if a, _, _ := e.Account(ctx, acct.AccountID); a.Balance != 20 || a.Active != 0 {
		t.Fatalf("account after the refund: %+v", a)
	}
}

// A run's brand context comes from the log: a node whose read model is
// empty (new, rebuilding, behind) still runs it with its brand context,
// here on a delivery made after the first one was lost.
func TestRedeliveredRunOnAnEmptyReadModelHasItsBrandContext(t *testing.T) {
	// The service's read model (brandMap) stays empty.
	ctx := context.Background()
	got := make(chan *engine.BrandContext, 4)
	app := engine.App{Slug: "branded", Name: "branded", Price: 5, Runnable: true, AcceptsBrandContext: true, Timeout: time.Minute,
		InputSchema: []byte(`{"type":"object"}`),
		Executor: engine.Executor(func(ctx context.Context, job engine.Job, progress func(engine.Step)) (engine.Result, error) {
			got <- job.BrandContext
			return engine.Result{Summary: "s", Output: map[string]any{}}, nil
		})}
	e := startEngine(t, true, engine.Limits{OwnerActiveRuns: 3, PlatformActiveRuns: 12}, okApp(), app)
	if _, _, err := e.SetPrice(ctx, "branded", 5, false, ledger.By{Actor: "system:test", Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	e.StopExecutor() // the first delivery is lost with this node's executor
	acct, _ := e.OpenAccount(ctx, "a@example.com", 20, ledger.By{Actor: "system:test", Reason: "test"})
	bc, _, err := e.CreateBrandContext(ctx, acct.AccountID, engine.BrandContext{Name: "Acme"})
	if err != nil {
		t.Fatal(err)
	}
	run, err := e.CreateRun(ctx, service.CreateRunRequest{AccountID: acct.AccountID, KeyID: acct.KeyID, AppSlug: "branded",
		Input: map[string]any{}, BrandContextID: &bc.ID})
	if err != nil {
		t.Fatalf("create with a brand context the read model has not seen: %v", err)
	}
	if err := e.ExecuteRun(ctx, run.RunNo, 2); err != nil {
		t.Fatal(err)
	}
	if b := <-got; b == nil || b.Name != "Acme" {
		t.Fatalf("the App got brand context %+v, want Acme", b)
	}
	evs, _ := e.RunLog(ctx, run.RunNo, 0)
	if last := evs[len(evs)-1].Event; last.Type != engine.RunCompleted {
		t.Fatalf("the run ended %s (%+v), want completed", last.Type, last.Failed)
	}
}

// lossyLog loses the answer of the next n atomic batches: stored first
// (the ack is lost) when stored, or not at all (a timeout before).
type lossyLog struct {
	port.Log
	mu     sync.Mutex
	n      int
	stored bool
}

func (l *lossyLog) Append(ctx context.Context, entries ...port.Entry) (uint64, error) {
	l.mu.Lock()
	lose := len(entries) > 1 && l.n > 0
	if lose {
		l.n--
	}
	l.mu.Unlock()
	if !lose {
		return l.Log.Append(ctx, entries...)
	}
	if l.stored {
		if _, err := l.Log.Append(ctx, entries...); err != nil {
			return 0, err
		}
	}
	return 0, port.ErrAmbiguous
}

// An admission whose answer is lost is resolved before the node answers:
// 201 with the run when its batch was stored, a refusal with nothing
// charged when it was not; never an error that hides a charge.
func TestAdmissionWithAnUnknownOutcomeAnswersWhatHappened(t *testing.T) {
	for _, stored := range []bool{true, false} {
		t.Run(fmt.Sprintf("stored=%v", stored), func(t *testing.T) {
			lossy := &lossyLog{stored: stored}
			e := startEngineWith(t, false, engine.Limits{OwnerActiveRuns: 3, PlatformActiveRuns: 12},
				func(l port.Log) port.Log { lossy.Log = l; return lossy }, okApp())
			ctx := context.Background()
			acct, err := e.OpenAccount(ctx, "a@example.com", 100, ledger.By{Actor: "system:test", Reason: "test"})
			if err != nil {
				t.Fatal(err)
			}
			lossy.mu.Lock()
			lossy.n = 1
			lossy.mu.Unlock()
			run, err := e.CreateRun(ctx, service.CreateRunRequest{AccountID: acct.AccountID, KeyID: acct.KeyID, AppSlug: "ok", Input: map[string]any{}})
			a, _, _ := e.Account(ctx, acct.AccountID)
			if stored {
				if err != nil || run.RunNo == "" {
					t.Fatalf("a stored admission whose ack was lost: %v, want the run", err)
				}
				if evs, _ := e.RunLog(ctx, run.RunNo, 0); len(evs) == 0 || evs[0].Seq != run.Seq {
					t.Fatalf("answered seq %d, the run's log is %+v", run.Seq, evs)
				}
				finished(t, e, run.RunNo)
				return
			}
			if !errors.Is(err, port.ErrUnavailable) || !strings.Contains(err.Error(), "nothing was charged") {
				t.Fatalf("an admission never stored: %v, want a refusal saying nothing was charged", err)
			}
			if a.Balance != 100 || a.Active != 0 {
				t.Fatalf("a refused admission charged the account: %+v", a)
			}
		})
	}
}
