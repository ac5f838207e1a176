package engine_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	. "github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/internal/logbuf"
)

// An executor that meets its run's cancel logs it once, at INFO, however
// it meets it: here its App goes on to its next step before the cancel
// has stopped it (the engine is driven directly, so nothing stops it),
// and the step's write finds the run ended. That path ended the run's
// execution without a word; a CI run found the website's cancel test
// missing the line when the node's live view was slow.
func TestACancelMetByTheNextStepIsLoggedOnceAtInfo(t *testing.T) {
	step1, release := make(chan struct{}), make(chan struct{})
	held := App{Slug: "held", Name: "held", Price: 5, Runnable: true, InputSchema: []byte(`{"type":"object"}`),
		Executor: ExecutorFunc(func(ctx context.Context, job Job, progress func(Step)) (Result, error) {
			progress(Step{Index: 1, Total: 2, Tool: "t", Message: "first"})
			close(step1)
			<-release // deaf to ctx: the cancel reaches it through its next step
			progress(Step{Index: 2, Total: 2, Tool: "t", Message: "second"})
			return Result{Summary: "s", Output: map[string]any{"x": 1}}, nil
		})}
	var logs logbuf.Buffer
	e, err := newEngineConfig(t, false, Limits{}, nil, func(c *Config) {
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
	acct, err := e.OpenAccount(ctx, "a@example.com", 100)
	if err != nil {
		t.Fatal(err)
	}
	run, err := e.CreateRun(ctx, CreateRunRequest{AccountID: acct.AccountID, KeyID: acct.KeyID, AppSlug: "held", Input: map[string]any{}})
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
