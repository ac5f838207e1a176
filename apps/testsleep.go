package apps

import (
	"context"
	"errors"
	"time"

	"github.com/apprun/apprun/engine"
)

// TestSleepSlug is the slug of the test fixture App.
const TestSleepSlug = "test-sleep"

// TestSleep is a fixture for tests that drive real server processes
// (APPRUN_TEST_APPS=1 adds it; it is never in the default catalog): a run
// sleeps for input.ms milliseconds, then completes, or fails when
// input.fail is true. With input.steps it reports that many tool_running
// ticks spread evenly over the sleep (load tests use it for runs that make
// events at a known pace). It costs 1 Credit.
func TestSleep() engine.App { return TestSleepOn("") }

// TestSleepOn is TestSleep whose ticks say which node ran them ("tick on
// <node>"), so a cluster test can tell the executing node.
func TestSleepOn(node string) engine.App {
	msg := "tick"
	if node != "" {
		msg += " on " + node
	}
	return engine.App{
		Slug:        TestSleepSlug,
		Name:        "Test: sleep",
		Description: "Test fixture: sleeps, then completes or fails.",
		Price:       1,
		Timeout:     15 * time.Minute,
		Runnable:    true,
		InputSchema: []byte(`{"type":"object","additionalProperties":false,
"properties":{"ms":{"type":"integer","minimum":0,"maximum":600000},"steps":{"type":"integer","minimum":0,"maximum":100000},
"fail":{"type":"boolean"}}}`),
		Executor: engine.Executor(func(ctx context.Context, job engine.Job, progress func(engine.Step)) (engine.Result, error) {
			ms, _ := job.Input["ms"].(float64)
			if steps, _ := job.Input["steps"].(float64); steps > 0 {
				if err := tick(ctx, int(steps), time.Duration(ms)*time.Millisecond, msg, progress); err != nil {
					return engine.Result{}, err
				}
				return engine.Result{Summary: "ticked", Output: map[string]any{"slept_ms": ms, "steps": steps}}, nil
			}
			progress(engine.Step{Index: 1, Total: 2, Tool: "sleep", Message: "sleeping"})
			if err := sleep(ctx, time.Duration(ms)*time.Millisecond); err != nil {
				return engine.Result{}, err
			}
			if fail, _ := job.Input["fail"].(bool); fail {
				return engine.Result{}, errors.New("the input asked this run to fail")
			}
			progress(engine.Step{Index: 2, Total: 2, Tool: "wake", Message: "awake"})
			return engine.Result{Summary: "slept", Output: map[string]any{"slept_ms": ms}}, nil
		}),
	}
}

// tick reports n steps spread evenly over d.
func tick(ctx context.Context, n int, d time.Duration, msg string, progress func(engine.Step)) error {
	for i := 1; i <= n; i++ {
		if err := sleep(ctx, d/time.Duration(n)); err != nil {
			return err
		}
		progress(engine.Step{Index: i, Total: n, Tool: "tick", Message: msg})
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
