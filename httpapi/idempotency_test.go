package httpapi_test

import (
	"strings"
	"testing"

	. "github.com/apprun/apprun/node/nodetest"
)

func TestIdempotencyKeyReplaysTheFirstAnswer(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	first := h.Do("POST", "/api/v1/runs", a.Key, RunTestApp("ok"), "Idempotency-Key", "order-42")
	if first.Status != 201 || first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d %s replayed=%q", first.Status, first.Body, first.Header.Get("Idempotent-Replayed"))
	}
	// Same request, other formatting and member order: the same request.
	again := h.Do("POST", "/api/v1/runs", a.Key, RawBody(`{ "input": {"mode":"ok"},  "app_slug": "test-app" }`, "application/json"), "Idempotency-Key", "order-42")
	if again.Status != 201 || again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(first.Body) {
		t.Fatalf("retry: %d %s replayed=%q, want the first answer %s", again.Status, again.Body, again.Header.Get("Idempotent-Replayed"), first.Body)
	}
	if bal, _ := h.Balance(a); bal != 90 {
		t.Fatalf("balance %d after a create and its retry, want 90 (one charge)", bal)
	}
	// A different body with the same key is refused and charges nothing.
	other := h.Do("POST", "/api/v1/runs", a.Key, RunTestApp("fail"), "Idempotency-Key", "order-42")
	if other.Status != 422 || other.ErrorCode(t) != "idempotency_key_reused" {
		t.Fatalf("same key, other body: %d %s", other.Status, other.Body)
	}
	// Keys are per account.
	b := h.Account(100)
	if r := h.Do("POST", "/api/v1/runs", b.Key, RunTestApp("ok"), "Idempotency-Key", "order-42"); r.Status != 201 || r.JSON(t)["run_no"] == first.JSON(t)["run_no"] {
		t.Fatalf("another account's same key: %d %s", r.Status, r.Body)
	}
	if bal, _ := h.Balance(a); bal != 90 {
		t.Fatalf("balance %d, want 90", bal)
	}
	for _, bad := range []string{strings.Repeat("k", 256), "tab\tkey"} {
		if r := h.Do("POST", "/api/v1/runs", a.Key, RunTestApp("ok"), "Idempotency-Key", bad); r.Status != 400 || r.ErrorCode(t) != "invalid_request" {
			t.Fatalf("Idempotency-Key %q: %d %s", bad, r.Status, r.Body)
		}
	}
}

func TestIdempotencyKeyOfAFailedRequestCanBeRetried(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(0)
	if r := h.Do("POST", "/api/v1/runs", a.Key, RunTestApp("ok"), "Idempotency-Key", "k1"); r.Status != 402 {
		t.Fatalf("first try without credits: %d %s", r.Status, r.Body)
	}
	h.Do("POST", "/admin/v1/accounts/"+a.ID+"/credits", AdminToken, map[string]any{"reason": "test", "amount": 10})
	if r := h.Do("POST", "/api/v1/runs", a.Key, RunTestApp("ok"), "Idempotency-Key", "k1"); r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("retry after the grant: %d %s", r.Status, r.Body)
	}
}

func TestIdempotencyKeyRace(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	for round := 0; round < 3; round++ {
		a := h.Account(100)
		_, out := Concurrently(t, 10, func(int) Response {
			return h.Do("POST", "/api/v1/runs", a.Key, RunTestApp("ok"), "Idempotency-Key", "race")
		})
		// One creates the run; the others find it (no claim is written
		// ahead of the checks, so none is told to wait).
		runNo, fresh := "", 0
		for _, r := range out {
			if r.Status != 201 {
				t.Fatalf("round %d: answer %d %s, want the run's 201", round, r.Status, r.Body)
			}
			no := r.JSON(t)["run_no"].(string)
			if runNo != "" && no != runNo {
				t.Fatalf("round %d: two runs %s and %s for one key", round, runNo, no)
			}
			runNo = no
			if r.Header.Get("Idempotent-Replayed") == "" {
				fresh++
			}
		}
		if fresh != 1 {
			t.Fatalf("round %d: %d answers not marked replayed, want the one that created the run", round, fresh)
		}
		if runNo == "" {
			t.Fatalf("round %d: no request created the run", round)
		}
		if bal, _ := h.Balance(a); bal != 90 {
			t.Fatalf("round %d: balance %d after 10 identical requests, want 90", round, bal)
		}
		if runs := h.Do("GET", "/api/v1/runs", a.Key, nil).JSON(t)["data"].([]any); len(runs) != 1 {
			t.Fatalf("round %d: %d runs, want 1", round, len(runs))
		}
	}
}

func TestIdempotencyKeySurvivesARestart(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	first := h.Do("POST", "/api/v1/runs", a.Key, RunTestApp("ok"), "Idempotency-Key", "persist")
	h.Restart()
	again := h.Do("POST", "/api/v1/runs", a.Key, RunTestApp("ok"), "Idempotency-Key", "persist")
	if again.Status != 201 || string(again.Body) != string(first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("after a restart: %d %s, want the replay of %s", again.Status, again.Body, first.Body)
	}
	if bal, _ := h.Balance(a); bal != 90 {
		t.Fatalf("balance %d, want 90", bal)
	}
}
