package httpapi_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/apprun/apprun/engine"
	. "github.com/apprun/apprun/node/nodetest"
)

// A create refused for any reason writes nothing to the log, with or
// without an Idempotency-Key: the key's record was written before any
// check and kept 25 hours, so one key refused 72,000 times in 90 s grew
// the log by 48 MiB, about 2 GB an hour, through every limit.
func TestARefusedCreateWritesNothing(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(engine.Limits{CreatePerMinute: 3, ReadsPerMinute: 1000}))
	a, broke := h.Account(1000), h.Account(0)
	h.KeyUsed(a)
	h.KeyUsed(broke)
	refuse := func(key string, body any, status int, code string) {
		t.Helper()
		head := h.LogHead()
		for try := range 3 {
			r := h.Do("POST", "/api/v1/runs", key, body, "Idempotency-Key", fmt.Sprintf("refused-%d-%d", status, try))
			if r.Status != status || r.ErrorCode(t) != code {
				t.Fatalf("a create: %d %s, want %d %s", r.Status, r.Body, status, code)
			}
		}
		if now := h.LogHead(); now != head {
			t.Fatalf("creates refused with %d %s wrote %d messages to the log", status, code, now-head)
		}
	}
	refuse(a.Key, RawBody(`{"app_slug":`, "application/json"), 400, "invalid_request")
	refuse("ak_not_a_key", RunTestApp("ok"), 401, "unauthorized")
	refuse(broke.Key, RunTestApp("ok"), 402, "insufficient_credits")
	refuse(a.Key, map[string]any{"app_slug": "no-such-app", "input": map[string]any{}}, 404, "app_not_found")
	refuse(a.Key, map[string]any{"app_slug": "unpriced", "input": map[string]any{}}, 409, "pricing_not_ready")
	refuse(a.Key, RunTestApp("nonsense"), 422, "invalid_input")
	for range 3 { // the creation window, full; the runs ended
		h.WaitRun(a, h.Create(a, RunTestApp("ok")))
	}
	refuse(a.Key, RunTestApp("ok"), 429, "rate_limited")
}

// Refused requests are limited themselves: a key past its budget of
// refused writes (60 a minute by default) and an address past its budget
// of failed key checks (120) are answered 429, where 72,000 refused
// creates from one key never met a 429. A key's reads are not counted (a
// poller's 404s), and from a spent address a good key, the website and
// the probes are served (a proxy or a NAT is many clients).
func TestRefusedRequestsAreLimitedPerKeyAndPerAddress(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits))
	a, b := h.Account(100), h.Account(100)
	for range 70 {
		if r := h.Do("GET", "/api/v1/runs/run_aaaaaaaaaaaaaaaaaaaaaaaaaa", a.Key, nil); r.Status != 404 {
			t.Fatalf("a read of a run that is not there: %d %s", r.Status, r.Body)
		}
	}
	statuses := func(n int, key string, body any) map[int]int {
		t.Helper()
		got := map[int]int{}
		for range n {
			r := h.Do("POST", "/api/v1/runs", key, body)
			got[r.Status]++
			if r.Status == 429 && (r.ErrorCode(t) != "rate_limited" || r.Header.Get("Retry-After") == "") {
				t.Fatalf("a refusal past the budget: %s, Retry-After %q", r.Body, r.Header.Get("Retry-After"))
			}
		}
		return got
	}
	// A budget refills as it is spent (a key's by one a second, an
	// address's by two): a slow machine sees a few more refusals pass.
	began := time.Now()
	if got := statuses(70, a.Key, RunTestApp("nonsense")); got[422] < 60 || got[422] > 61+int(time.Since(began).Seconds()) || got[429] != 70-got[422] || got[429] == 0 {
		t.Fatalf("70 invalid creates from one key in %s: %v, want 60 refused with 422, then 429", time.Since(began), got)
	}
	if r := h.Do("POST", "/api/v1/runs", b.Key, RunTestApp("ok")); r.Status != 201 {
		t.Fatalf("another key meanwhile: %d %s", r.Status, r.Body)
	}
	began = time.Now()
	got := statuses(130, "ak_forged", RunTestApp("ok"))
	if got[401] < 120 || got[401] > 121+2*int(time.Since(began).Seconds()) || got[429] != 130-got[401] || got[429] == 0 {
		t.Fatalf("130 creates with a forged key from one address in %s: %v, want 120 refused with 401, then 429", time.Since(began), got)
	}
	// A request without a key is a failed key check too: refused 429 once
	// the address's budget is spent. What refilled since (two a second) may
	// pass first, and no more.
	for passed := got[401]; ; passed++ {
		r := h.Do("GET", "/api/v1/runs", "", nil)
		if r.Status == 429 {
			break
		}
		if r.Status != 401 || passed+1 > 121+2*int(time.Since(began).Seconds()) {
			t.Fatalf("a request without a key from the spent address, %d checks failed in %s: %d, want 429", passed+1, time.Since(began), r.Status)
		}
	}
	for path, key := range map[string]string{"/api/v1/account": b.Key, "/readyz": "", "/healthz": "", "/apps": "", "/signin": ""} {
		if r := h.Do("GET", path, key, nil); r.Status != 200 {
			t.Fatalf("GET %s from the spent address: %d %s", path, r.Status, r.Body)
		}
	}
}
