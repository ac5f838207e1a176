package service_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"

	"github.com/apprun/apprun/internal/logbuf"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service"
)

// An executor that meets its run's cancel logs it once, at INFO, however
// it meets it: here its App goes on to its next step before the cancel
// has stopped it (the service is driven directly, so nothing stops it),
// and the step's write finds the run ended. That path ended the run's
// execution without a word; a CI run found the website's cancel test
// missing the line when the node's live view was slow.
func TestACancelMetByTheNextStepIsLoggedOnceAtInfo(t *testing.T) {
	step1, release := make(chan struct{}), make(chan struct{})
	held := engine.App{Slug: "held", Name: "held", Price: 5, Runnable: true, InputSchema: []byte(`{"type":"object"}`),
		Executor: engine.Executor(func(ctx context.Context, job engine.Job, progress func(engine.Step)) (engine.Result, error) {
			progress(engine.Step{Index: 1, Total: 2, Tool: "t", Message: "first"})
			close(step1)
			<-release // deaf to ctx: the cancel reaches it through its next step
			progress(engine.Step{Index: 2, Total: 2, Tool: "t", Message: "second"})
			return engine.Result{Summary: "s", Output: map[string]any{"x": 1}}, nil
		})}
	var logs logbuf.Buffer
	e, err := newEngineConfig(t, false, engine.Limits{}, nil, func(c *service.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}, held)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	acct, err := e.OpenAccount(ctx, "a@example.com", 100, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	run, err := e.CreateRun(ctx, service.CreateRunRequest{AccountID: acct.AccountID, KeyID: acct.KeyID, AppSlug: "held", Input: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- e.ExecuteRun(ctx, run.RunNo, 1) }()
	select {
	case <-step1:
	case <-ctx.Done():
		t.Fatal("the run did not start")
	}
	if _, _, err := e.CancelRun(ctx, acct.AccountID, run.RunNo); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("execution after the cancel: %v", err)
	}
	out := logs.String()
	if strings.Contains(out, "level=ERROR") || strings.Count(out, "level=INFO msg=\"run canceled by its owner") != 1 {
		t.Fatalf("want the cancel logged once at INFO and no error:\n%s", out)
	}
}

// cancelBefore is a service on a log that, just before the first append
// that match selects, cancels the run the test names through run, and a
// buffer of its INFO log.
func cancelBefore(t *testing.T, match func([]port.Entry) bool, run *service.CreatedRun, acct *service.NewAccount) (*service.Service, *logbuf.Buffer) {
	t.Helper()
	var logs logbuf.Buffer
	rec := &recordingLog{}
	var e *service.Service
	e, err := newEngineConfig(t, false, engine.Limits{}, func(l port.Log) port.Log {
		rec.Log = l
		rec.before = match
		rec.inject = func() {
			if _, _, err := e.CancelRun(context.Background(), acct.AccountID, run.RunNo); err != nil {
				t.Errorf("cancel: %v", err)
			}
		}
		return rec
	}, func(c *service.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}, okApp())
	if err != nil {
		t.Fatal(err)
	}
	return e, &logs
}

// carries reports whether entries hold a run event of type ty.
func carries(ty string) func([]port.Entry) bool {
	return func(entries []port.Entry) bool {
		for _, en := range entries {
			if strings.HasPrefix(en.Subject, "apprun.run.") && strings.Contains(string(en.Data), `"type":"`+ty+`"`) {
				return true
			}
		}
		return false
	}
}

// A cancel that lands between the executor's read of a queued run and
// its started event, or between a finish's read of the account and its
// write, is met by a refused compare-and-set. Either is a cancel, logged
// once at INFO: the first was an ERROR ("run execution interrupted") and
// a redelivery, the second no line at all (a CI run of the website's
// cancel test found both).
func TestACancelMetByTheStartOrTheFinishIsLoggedOnceAtInfo(t *testing.T) {
	for _, ty := range []string{"started", "completed"} {
		t.Run(ty, func(t *testing.T) {
			var (
				run  service.CreatedRun
				acct service.NewAccount
			)
			e, logs := cancelBefore(t, carries(ty), &run, &acct)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := e.Prepare(ctx); err != nil {
				t.Fatal(err)
			}
			acct = openAccount(t, e, 100)
			run = createOkRun(t, e, acct)
			if err := e.ExecuteRun(ctx, run.RunNo, 1); err != nil {
				t.Fatalf("execution after the cancel: %v", err)
			}
			events, err := e.RunLog(ctx, run.RunNo, 0)
			if err != nil {
				t.Fatal(err)
			}
			if end := events[len(events)-1].Event; end.Type != engine.RunFailed || end.Failed.Error == nil || end.Failed.Error.Code != "canceled" {
				t.Fatalf("the run ended %+v, want canceled", end)
			}
			out := logs.String()
			if strings.Contains(out, "level=ERROR") || strings.Count(out, "level=INFO msg=\"run canceled by its owner") != 1 {
				t.Fatalf("want the cancel logged once at INFO and no error:\n%s", out)
			}
		})
	}
}
