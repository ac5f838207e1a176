package node_test

import (
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/engine"
	. "github.com/apprun/apprun/node/nodetest"
)

func TestFailedRunIsRefunded(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	runNo := h.Create(a, RunTestApp("hold_fail"))
	if bal, active := h.Balance(a); bal != 90 || active != 1 {
		t.Fatalf("balance %d active %d after creation, want 90 and 1 (charged at creation)", bal, active)
	}
	h.ReleaseHeld()
	evs := h.Collect(a, runNo)
	last := evs[len(evs)-1]
	if last.Event != "failed" {
		t.Fatalf("last event %q, want failed: %+v", last.Event, evs)
	}
	refund, _ := last.Data["refund"].(map[string]any)
	errObj, _ := last.Data["error"].(map[string]any)
	if refund["credits"] != float64(10) || errObj["code"] != "execution_failed" || errObj["message"] == "" {
		t.Fatalf("failed event data %v: want the error and a 10-credit refund", last.Data)
	}
	run := h.Do("GET", "/api/v1/runs/"+runNo, a.Key, nil).JSON(t)
	if run["status"] != "failed" || run["error"] == nil || run["refunded_credits"] != float64(10) || run["output"] != nil {
		t.Fatalf("failed run record: %v", run)
	}
	// A terminal run's result is its summary and its output (the spec): a
	// failed run says in one sentence what failed and that the Credits
	// came back, and its output is null, present.
	if out, present := run["output"]; !present || out != nil {
		t.Fatalf("failed run: output %v (present %v), want null", out, present)
	}
	if sum, _ := run["summary"].(string); !strings.Contains(sum, "failed") || !strings.Contains(sum, "10 Credits") || !strings.Contains(sum, "refunded") {
		t.Fatalf("failed run summary %q: want what failed and the 10 Credits refunded", sum)
	}
	if bal, active := h.Balance(a); bal != 100 || active != 0 {
		t.Fatalf("after the failure balance %d active %d, want 100 and 0", bal, active)
	}
	acct := h.Do("GET", "/api/v1/account", a.Key, nil).JSON(t)
	if acct["balance"] != float64(100) || acct["active_runs"] != float64(0) {
		t.Fatalf("GET /account after refund: %v", acct)
	}
}

func TestCompletedRunKeepsItsCharge(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	for i := 0; i < 3; i++ {
		h.WaitRun(a, h.Create(a, RunTestApp("ok")))
	}
	h.WaitRun(a, h.Create(a, RunTestApp("fail")))
	if bal, active := h.Balance(a); bal != 70 || active != 0 {
		t.Fatalf("3 completed + 1 failed at 10: balance %d active %d, want 70 and 0", bal, active)
	}
}

func TestRunPastItsTimeoutFailsAndIsRefunded(t *testing.T) {
	h := Start(t, WithLimits(NoLimits), WithAppTimeout(TestAppSlug, 300*time.Millisecond))
	a := h.Account(100)
	runNo := h.Create(a, RunTestApp("hold")) // never released: only the timeout ends it
	evs := h.Collect(a, runNo)
	last := evs[len(evs)-1]
	errObj, _ := last.Data["error"].(map[string]any)
	if last.Event != "failed" || errObj["code"] != "timeout" {
		t.Fatalf("last event %s %v, want failed with code timeout", last.Event, last.Data)
	}
	if bal, active := h.Balance(a); bal != 100 || active != 0 {
		t.Fatalf("after the timeout balance %d active %d, want 100 and 0", bal, active)
	}
}

func TestMaxCreditCostRefusesAHigherPriceAndChargesNothing(t *testing.T) {
	h := Start(t, WithLimits(engine.Limits{CreatePerMinute: 1}))
	a := h.Account(100)
	over := ColdEmailRun()
	over["max_credit_cost"] = 24
	r := h.Do("POST", "/api/v1/runs", a.Key, over)
	if r.Status != 409 || r.ErrorCode(t) != "pricing_not_ready" || !strings.Contains(string(r.Body), "25 Credits") {
		t.Fatalf("over the cap: %d %s, want 409 pricing_not_ready naming the price", r.Status, r.Body)
	}
	if bal, active := h.Balance(a); bal != 100 || active != 0 {
		t.Fatalf("balance %d, %d active after a refused create", bal, active)
	}
	for _, bad := range []any{-1, 2.5, "25", true} {
		body := ColdEmailRun()
		body["max_credit_cost"] = bad
		if r := h.Do("POST", "/api/v1/runs", a.Key, body); r.Status != 400 || r.ErrorCode(t) != "invalid_request" {
			t.Fatalf("max_credit_cost %v: %d %s", bad, r.Status, r.Body)
		}
	}
	// The refusals did not use the creation limit (1 a minute): a cap at
	// the price is accepted and charged once.
	at := ColdEmailRun()
	at["max_credit_cost"] = 25
	h.WaitRun(a, h.Create(a, at))
	if bal, _ := h.Balance(a); bal != 75 {
		t.Fatalf("balance %d after a run at its cap, want 75", bal)
	}
}
