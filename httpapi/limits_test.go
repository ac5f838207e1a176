package httpapi_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/apprun/apprun/engine"
	. "github.com/apprun/apprun/node/nodetest"
)

func TestCreateRateLimitPerKey(t *testing.T) {
	h := Start(t, WithLimits(engine.Limits{CreatePerMinute: 10}))
	a := h.Account(10_000)
	counts, out := Concurrently(t, 15, func(int) Response { return h.Do("POST", "/api/v1/runs", a.Key, RunTestApp("ok")) })
	if counts["201"] != 10 || counts["429 rate_limited"] != 5 {
		t.Fatalf("15 concurrent creates with a limit of 10: %v", counts)
	}
	// The window just filled: the wait is until its oldest request is a minute old.
	for _, r := range out {
		if ra, _ := strconv.Atoi(r.Header.Get("Retry-After")); r.Status == 429 && ra < 50 {
			t.Fatalf("Retry-After %d right after the window filled, want the rest of the minute", ra)
		}
	}
	// The limit is per key: another key of the same account has its own.
	k2 := h.Do("POST", "/admin/v1/accounts/"+a.ID+"/keys", AdminToken, nil).JSON(t)["api_key"].(string)
	if r := h.Do("POST", "/api/v1/runs", k2, RunTestApp("ok")); r.Status != 201 {
		t.Fatalf("a second key was limited by the first one's count: %d %s", r.Status, r.Body)
	}
	// A refused create does not count: invalid input spends no creation.
	b := h.Account(10_000)
	for i := 0; i < 5; i++ {
		h.Do("POST", "/api/v1/runs", b.Key, map[string]any{"app_slug": TestAppSlug, "input": map[string]any{}})
	}
	counts, _ = Concurrently(t, 10, func(int) Response { return h.Do("POST", "/api/v1/runs", b.Key, RunTestApp("ok")) })
	if counts["201"] != 10 {
		t.Fatalf("refused creates counted against the limit: %v", counts)
	}
}

func TestReadRateLimitPerKey(t *testing.T) {
	h := Start(t, WithLimits(engine.Limits{ReadsPerMinute: 120}))
	a := h.Account(0)
	paths := []string{"/api/v1/account", "/api/v1/capabilities", "/api/v1/runs", "/api/v1/capabilities/cold-email-writer"}
	counts, _ := Concurrently(t, 130, func(i int) Response { return h.Do("GET", paths[i%len(paths)], a.Key, nil) })
	if counts["200"] != 120 || counts["429 rate_limited"] != 10 {
		t.Fatalf("130 concurrent reads with a limit of 120: %v", counts)
	}
	other := h.Account(0)
	if r := h.Do("GET", "/api/v1/account", other.Key, nil); r.Status != 200 {
		t.Fatalf("another key was limited: %d", r.Status)
	}
	// Creation has its own budget, untouched by reads.
	h.Do("POST", "/admin/v1/accounts/"+a.ID+"/credits", AdminToken, map[string]any{"reason": "test", "amount": 100})
	if r := h.Do("POST", "/api/v1/runs", a.Key, RunTestApp("ok")); r.Status != 201 {
		t.Fatalf("create after the read budget was spent: %d %s", r.Status, r.Body)
	}
}

func TestActiveRunsPerAccount(t *testing.T) {
	h := Start(t, WithLimits(engine.Limits{OwnerActiveRuns: 3, PlatformActiveRuns: 12}))
	a := h.Account(1000)
	k2 := Account{ID: a.ID, Key: h.Do("POST", "/admin/v1/accounts/"+a.ID+"/keys", AdminToken, nil).JSON(t)["api_key"].(string)}
	counts, out := Concurrently(t, 6, func(i int) Response {
		key := a
		if i%2 == 1 {
			key = k2 // the ceiling is per account, across its keys
		}
		return h.Do("POST", "/api/v1/runs", key.Key, RunTestApp("hold"))
	})
	if counts["201"] != 3 || counts["429 concurrency_limit"] != 3 {
		t.Fatalf("6 concurrent creates with an account ceiling of 3: %v", counts)
	}
	if bal, active := h.Balance(a); bal != 1000-30 || active != 3 {
		t.Fatalf("refused creates charged: balance %d active %d", bal, active)
	}
	// Another account is not affected.
	b := h.Account(100)
	if r := h.Do("POST", "/api/v1/runs", b.Key, RunTestApp("ok")); r.Status != 201 {
		t.Fatalf("another account was limited: %d %s", r.Status, r.Body)
	}
	// When a run finishes, a slot opens.
	h.ReleaseHeld()
	for _, r := range out {
		if r.Status == 201 {
			h.WaitRun(a, r.JSON(t)["run_no"].(string))
		}
	}
	if r := h.Do("POST", "/api/v1/runs", a.Key, RunTestApp("ok")); r.Status != 201 {
		t.Fatalf("create after the active runs finished: %d %s", r.Status, r.Body)
	}
}

func TestActiveRunsPlatformWide(t *testing.T) {
	h := Start(t, WithLimits(engine.Limits{OwnerActiveRuns: 3, PlatformActiveRuns: 12}))
	accts := make([]Account, 6)
	for i := range accts {
		accts[i] = h.Account(1000)
	}
	// 6 accounts × 3 = 18 attempts, all within their account's ceiling.
	counts, out := Concurrently(t, 18, func(i int) Response {
		return h.Do("POST", "/api/v1/runs", accts[i%6].Key, RunTestApp("hold"))
	})
	if counts["201"] != 12 || counts["429 concurrency_limit"] != 6 {
		t.Fatalf("18 concurrent creates with a platform ceiling of 12: %v", counts)
	}
	var charged int64
	for _, a := range accts {
		bal, _ := h.Balance(a)
		charged += 1000 - bal
	}
	if charged != 12*10 {
		t.Fatalf("charged %d credits in all, want %d: refused creates must not charge", charged, 12*10)
	}
	h.ReleaseHeld()
	for i, r := range out {
		if r.Status == 201 {
			h.WaitRun(accts[i%6], r.JSON(t)["run_no"].(string))
		}
	}
	if r := h.Do("POST", "/api/v1/runs", accts[0].Key, RunTestApp("ok")); r.Status != 201 {
		t.Fatalf("create after every run finished: %d %s", r.Status, r.Body)
	}
}

func TestRateLimitHeadersCountDownAndEvery429HasRetryAfter(t *testing.T) {
	h := Start(t, WithLimits(engine.Limits{ReadsPerMinute: 3, CreatePerMinute: 2}))
	a := h.Account(1000)
	for i, want := range []string{"2", "1", "0"} {
		r := h.Do("GET", "/api/v1/account", a.Key, nil)
		reset, err := strconv.Atoi(r.Header.Get("RateLimit-Reset"))
		if r.Status != 200 || r.Header.Get("RateLimit-Limit") != "3" || r.Header.Get("RateLimit-Remaining") != want || err != nil || reset < 1 || reset > 60 {
			t.Fatalf("read %d: %d limit %q remaining %q reset %q", i+1, r.Status, r.Header.Get("RateLimit-Limit"),
				r.Header.Get("RateLimit-Remaining"), r.Header.Get("RateLimit-Reset"))
		}
	}
	r := h.Do("GET", "/api/v1/account", a.Key, nil)
	if r.Status != 429 || r.Header.Get("Retry-After") == "" || r.Header.Get("RateLimit-Remaining") != "0" ||
		r.Header.Get("RateLimit-Reset") != r.Header.Get("Retry-After") {
		t.Fatalf("read over the limit: %d, headers %v", r.Status, r.Header)
	}
	// Creates count in the shared JetStream window, with the same headers.
	for i, want := range []string{"1", "0"} {
		r := h.Do("POST", "/api/v1/runs", a.Key, ColdEmailRun())
		if r.Status != 201 || r.Header.Get("RateLimit-Limit") != "2" || r.Header.Get("RateLimit-Remaining") != want {
			t.Fatalf("create %d: %d limit %q remaining %q", i+1, r.Status, r.Header.Get("RateLimit-Limit"), r.Header.Get("RateLimit-Remaining"))
		}
	}
	r = h.Do("POST", "/api/v1/runs", a.Key, ColdEmailRun())
	if r.Status != 429 || r.Header.Get("Retry-After") == "" || r.Header.Get("RateLimit-Remaining") != "0" || r.Header.Get("RateLimit-Reset") == "" {
		t.Fatalf("create over the limit: %d, headers %v", r.Status, r.Header)
	}
	// The event stream (its connection taken over from net/http) says it too.
	k := h.Do("POST", "/admin/v1/accounts/"+a.ID+"/keys", AdminToken, nil).JSON(t)["api_key"].(string)
	runNo := h.Do("GET", "/api/v1/runs?limit=1", k, nil).JSON(t)["data"].([]any)[0].(map[string]any)["run_no"].(string)
	if r := h.Do("GET", "/api/v1/runs/"+runNo+"/events", k, nil); r.Status != 200 || r.Header.Get("RateLimit-Remaining") != "1" {
		t.Fatalf("event stream: %d, headers %v", r.Status, r.Header)
	}
	// A request that counted against no limit carries none (admin calls).
	if r := h.Do("GET", "/admin/v1/accounts/"+a.ID, AdminToken, nil); r.Header.Get("RateLimit-Limit") != "" {
		t.Fatalf("admin answer with RateLimit headers: %v", r.Header)
	}
}

// A refusal for the account's ceiling of active runs does not use the
// create window (issue 47): 3 runs active, 7 creates refused with
// concurrency_limit, the runs end, and the next create is admitted at
// once (it was 429 rate_limited for a minute). A rate limit's refusal
// names its limit.
func TestConcurrencyRefusalsDoNotSpendTheCreateWindow(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(engine.Limits{CreatePerMinute: 10, OwnerActiveRuns: 3, PlatformActiveRuns: 12}))
	a := h.Account(1000)
	var held []string
	for range 3 {
		held = append(held, h.Create(a, RunTestApp("hold")))
	}
	for i := range 7 {
		r := h.Do("POST", "/api/v1/runs", a.Key, RunTestApp("ok"))
		if r.Status != 429 || r.ErrorCode(t) != "concurrency_limit" || !strings.Contains(string(r.Body), `"limit":"account_active_runs"`) {
			t.Fatalf("create %d past the ceiling: %d %s", i+1, r.Status, r.Body)
		}
	}
	h.ReleaseHeld()
	for _, runNo := range held {
		h.WaitRun(a, runNo)
	}
	r := h.Do("POST", "/api/v1/runs", a.Key, RunTestApp("ok"))
	if r.Status != 201 {
		t.Fatalf("a create once the runs ended: %d %s", r.Status, r.Body)
	}
	h.WaitRun(a, r.JSON(t)["run_no"].(string))
	for range 6 { // 4 + 6 = 10 counted, each run ended before the next
		h.WaitRun(a, h.Create(a, RunTestApp("ok")))
	}
	r = h.Do("POST", "/api/v1/runs", a.Key, RunTestApp("ok"))
	if r.Status != 429 || r.ErrorCode(t) != "rate_limited" || !strings.Contains(string(r.Body), "create limit of this API key (10 runs a minute)") ||
		!strings.Contains(string(r.Body), `"limit":"creates_per_minute"`) {
		t.Fatalf("the 11th create in a minute: %d %s", r.Status, r.Body)
	}
}
