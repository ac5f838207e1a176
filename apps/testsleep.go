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
// input.fail is true. It costs 1 Credit.
func TestSleep() engine.App {
	return engine.App{
		Slug:        TestSleepSlug,
		Name:        "Test: sleep",
		Description: "Test fixture: sleeps, then completes or fails.",
		Price:       1,
		Timeout:     15 * time.Minute,
		Runnable:    true,
		InputSchema: []byte(`{"type":"object","additionalProperties":false,
"properties":{"ms":{"type":"integer","minimum":0,"maximum":600000},"fail":{"type":"boolean"}}}`),
		Executor: engine.ExecutorFunc(func(ctx context.Context, job engine.Job, progress func(engine.Step)) (engine.Result, error) {
			ms, _ := job.Input["ms"].(float64)
			progress(engine.Step{Index: 1, Total: 2, Tool: "sleep", Message: "sleeping"})
			select {
			case <-time.After(time.Duration(ms) * time.Millisecond):
			case <-ctx.Done():
				return engine.Result{}, ctx.Err()
			}
			if fail, _ := job.Input["fail"].(bool); fail {
				return engine.Result{}, errors.New("the input asked this run to fail")
			}
			progress(engine.Step{Index: 2, Total: 2, Tool: "wake", Message: "awake"})
			return engine.Result{Summary: "slept", Output: map[string]any{"slept_ms": ms}}, nil
		}),
	}
}
