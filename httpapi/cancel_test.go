package httpapi_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apprun/apprun/audit"
	. "github.com/apprun/apprun/node/nodetest"

	"github.com/apprun/apprun/engine"
)

func TestCancelRefundsEndsTheStreamAndIsSafeToRepeat(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	runNo := h.Create(a, RunTestApp("hold"))
	for i := range 2 { // a second cancel answers the same
		r := h.Do("POST", "/api/v1/runs/"+runNo+"/cancel", a.Key, nil)
		m := r.JSON(t)
		if r.Status != 200 || m["status"] != "failed" || ErrCode(m) != "canceled" || m["refunded_credits"] != float64(10) {
			t.Fatalf("cancel %d: %d %s", i+1, r.Status, r.Body)
		}
		if out, present := m["output"]; !present || out != nil || !strings.Contains(m["summary"].(string), "10 Credits") {
			t.Fatalf("cancel %d: summary %v, output %v (present %v); want a sentence with the refund and a null output", i+1, m["summary"], out, present)
		}
	}
	if bal, active := h.Balance(a); bal != 100 || active != 0 {
		t.Fatalf("after cancel: balance %d, %d active; want 100 and 0", bal, active)
	}
	evs := h.Collect(a, runNo)
	last := evs[len(evs)-1]
	// The spec's four kinds only: a cancel ends the stream with failed.
	if last.Event != "failed" || last.Data["status"] != "failed" || ErrCode(last.Data) != "canceled" || last.Data["refund"].(map[string]any)["credits"] != float64(10) {
		t.Fatalf("stream ends with %s %v, want a failed event with the error code canceled and its refund", last.Event, last.Data)
	}
	for _, ev := range evs {
		if !slices.Contains([]string{"started", "tool_running", "completed", "failed"}, ev.Event) {
			t.Fatalf("event kind %q is not one of the spec's four", ev.Event)
		}
	}
	if run := h.Do("GET", "/api/v1/runs/"+runNo, a.Key, nil).JSON(t); run["status"] != "failed" || ErrCode(run) != "canceled" {
		t.Fatalf("run after cancel: %v", run)
	}
	// The held work is released now and must not write after the end.
	h.ReleaseHeld()
	done := h.WaitRun(a, h.Create(a, RunTestApp("ok")))
	if done["status"] != "completed" {
		t.Fatalf("a later run: %v", done)
	}
	for _, tc := range []struct {
		name, runNo, key string
		status           int
		code             string
	}{
		{"a finished run", done["run_no"].(string), a.Key, 409, "run_already_finished"},
		{"another account's run", runNo, h.Account(10).Key, 404, "run_not_found"},
		{"no such run", "run_aaaaaaaaaaaaaaaa", a.Key, 404, "run_not_found"},
	} {
		r := h.Do("POST", "/api/v1/runs/"+tc.runNo+"/cancel", tc.key, nil)
		if r.Status != tc.status || r.ErrorCode(t) != tc.code {
			t.Fatalf("cancel %s: %d %s, want %d %s", tc.name, r.Status, r.Body, tc.status, tc.code)
		}
	}
	h.Stop()
	var out bytes.Buffer
	if err := audit.Run(context.Background(), audit.Options{DataDir: h.Dir}, &out); err != nil || !strings.Contains(out.String(), "failed 1 (canceled 1)") {
		t.Fatalf("audit: %v\n%s", err, out.String())
	}
}

// TestCancelWinsAgainstCompletionUnderARace cancels held runs while they
// are released to complete. Whatever the interleaving, an acknowledged
// cancel means a canceled, refunded run, a refused one a completed,
// charged run, and the Credits add up.
func TestCancelWinsAgainstCompletionUnderARace(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(10_000)
	const n = 24
	runs := make([]string, n)
	for i := range runs {
		runs[i] = h.Create(a, RunTestApp("hold"))
	}
	answers := make([]Response, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range runs {
		wg.Go(func() {
			<-start
			answers[i] = h.Do("POST", "/api/v1/runs/"+runs[i]+"/cancel", a.Key, nil)
		})
	}
	wg.Go(func() {
		<-start
		h.ReleaseHeld()
	})
	close(start)
	wg.Wait()
	canceled, completed := 0, 0
	for i, runNo := range runs {
		run := h.WaitRun(a, runNo)
		switch ans := answers[i]; {
		case ans.Status == 200:
			canceled++
			if run["status"] != "failed" || ErrCode(run) != "canceled" || run["refunded_credits"] != float64(10) {
				t.Fatalf("run %s: cancel acknowledged but the run is %v", runNo, run)
			}
		case ans.Status == 409 && ans.ErrorCode(t) == string(engine.CodeRunFinished):
			completed++
			if run["status"] != "completed" {
				t.Fatalf("run %s: cancel refused as finished but the run is %v", runNo, run)
			}
		default:
			t.Fatalf("cancel of %s: %d %s", runNo, ans.Status, ans.Body)
		}
	}
	if bal, active := h.Balance(a); bal != 10_000-int64(10*completed) || active != 0 {
		t.Fatalf("balance %d with %d active after %d completed and %d canceled runs", bal, active, completed, canceled)
	}
	t.Logf("%d canceled, %d completed", canceled, completed)
	h.Stop()
	var out bytes.Buffer
	if err := audit.Run(context.Background(), audit.Options{DataDir: h.Dir}, &out); err != nil || !strings.Contains(out.String(), "invariant violations 0") {
		t.Fatalf("audit: %v\n%s", err, out.String())
	}
}
