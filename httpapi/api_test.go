package httpapi_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apprun/apprun/node"
	. "github.com/apprun/apprun/node/nodetest"
)

func TestCreateRunAnswersWithRelativeURLsAndTheLockedPrice(t *testing.T) {
	t.Parallel()
	h := Start(t)
	a := h.Account(100)
	r := h.Do("POST", "/api/v1/runs", a.Key, ColdEmailRun())
	if r.Status != http.StatusCreated {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	m := r.JSON(t)
	runNo, _ := m["run_no"].(string)
	if !strings.HasPrefix(runNo, "run_") || m["credit_cost"] != float64(25) {
		t.Fatalf("run_no/credit_cost: %v", m)
	}
	if m["stream_url"] != "/api/v1/runs/"+runNo+"/events" || m["result_url"] != "/api/v1/runs/"+runNo {
		t.Fatalf("URLs are not the relative paths of the run: %v", m)
	}
	if len(m) != 4 {
		t.Fatalf("creation answer has fields beyond the spec's four: %v", m)
	}
	if bal, _ := h.Balance(a); bal != 75 {
		t.Fatalf("balance %d after a 25-credit run was created, want 75 (charged at creation)", bal)
	}
	run := h.WaitRun(a, runNo)
	for _, f := range []string{"run_no", "app_slug", "status", "credit_cost", "created_at", "stream_url", "result_url", "summary", "output"} {
		if _, ok := run[f]; !ok {
			t.Errorf("completed run lacks %q: %v", f, run)
		}
	}
	emails := run["output"].(map[string]any)["emails"].([]any)
	if run["status"] != "completed" || len(emails) != 3 {
		t.Fatalf("run %v", run)
	}
	if bal, active := h.Balance(a); bal != 75 || active != 0 {
		t.Fatalf("after completion balance %d active %d, want 75 and 0", bal, active)
	}
}

// TestCreateRunRules pins each rule of POST /api/v1/runs (spec §4, 1–8)
// and the order in which they are checked.
func TestCreateRunRules(t *testing.T) {
	h := Start(t)
	rich := h.Account(1000)
	poor := h.Account(5)
	other := h.Account(1000)
	bc := h.Do("POST", "/api/v1/brand-contexts", other.Key, map[string]any{"name": "Other Co"}).JSON(t)["brand_context_id"].(string)
	own := h.Do("POST", "/api/v1/brand-contexts", rich.Key, map[string]any{"name": "Rich Co"}).JSON(t)["brand_context_id"].(string)
	if r := h.Do("PUT", "/admin/v1/apps/"+TestAppSlug+"/price", AdminToken, map[string]any{"reason": "test", "recalibrating": true}); r.Status != 200 {
		t.Fatalf("recalibrate: %d %s", r.Status, r.Body)
	}
	cases := []struct {
		name   string
		key    string
		body   any
		ctype  string
		status int
		code   string
	}{
		{"1 malformed JSON", rich.Key, `{"app_slug":`, "", 400, "invalid_request"},
		{"1 not JSON content", rich.Key, `app_slug=cold-email-writer`, "application/x-www-form-urlencoded", 400, "invalid_request"},
		{"1 multipart file upload", rich.Key, "--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.pdf\"\r\n\r\n%PDF\r\n--x--", "multipart/form-data; boundary=x", 400, "invalid_request"},
		{"1 JSON file field", rich.Key, map[string]any{"app_slug": "cold-email-writer", "input": map[string]any{"product_description": "data:application/pdf;base64,JVBE", "target_role": "x"}}, "", 400, "invalid_request"},
		// The key is judged from the headers, before a byte of the body is
		// read (docs/decisions.md).
		{"2 is checked before 1", "", `{`, "", 401, "unauthorized"},
		{"2 missing key", "", ColdEmailRun(), "", 401, "unauthorized"},
		{"2 invalid key", "ak_notakey", ColdEmailRun(), "", 401, "unauthorized"},
		{"3 balance below cost", poor.Key, ColdEmailRun(), "", 402, "insufficient_credits"},
		{"3 is checked before 6", poor.Key, map[string]any{"app_slug": "cold-email-writer", "input": map[string]any{}}, "", 402, "insufficient_credits"},
		{"4 unknown slug", rich.Key, map[string]any{"app_slug": "no-such-app", "input": map[string]any{}}, "", 404, "app_not_found"},
		{"4 listed but not runnable", rich.Key, map[string]any{"app_slug": "oss-growth", "input": map[string]any{"repo_url": "https://github.com/a/b"}}, "", 404, "app_not_found"},
		{"5 price missing", rich.Key, map[string]any{"app_slug": "unpriced", "input": map[string]any{}}, "", 409, "pricing_not_ready"},
		{"5 price recalibrating", rich.Key, RunTestApp("ok"), "", 409, "pricing_not_ready"},
		{"6 input fails the schema", rich.Key, map[string]any{"app_slug": "cold-email-writer", "input": map[string]any{"product_description": "x"}}, "", 422, "invalid_input"},
		{"7 another account's brand context", rich.Key, map[string]any{"app_slug": "cold-email-writer", "input": ColdEmailRun()["input"], "brand_context_id": bc}, "", 422, "invalid_brand_context"},
		{"7 unknown brand context", rich.Key, map[string]any{"app_slug": "cold-email-writer", "input": ColdEmailRun()["input"], "brand_context_id": "bc_zzzzzzzzzzzzzzzz"}, "", 422, "invalid_brand_context"},
		{"7 not a brand context id", rich.Key, map[string]any{"app_slug": "cold-email-writer", "input": ColdEmailRun()["input"], "brand_context_id": "../x"}, "", 422, "invalid_brand_context"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := c.body
			if c.ctype != "" {
				body = RawBody(c.body.(string), c.ctype)
			}
			r := h.Do("POST", "/api/v1/runs", c.key, body)
			if r.Status != c.status || r.ErrorCode(t) != c.code {
				t.Fatalf("got %d %s, want %d %s", r.Status, r.Body, c.status, c.code)
			}
		})
	}
	// Nothing above charged anything or created a run.
	for _, a := range []Account{rich, poor} {
		if bal, active := h.Balance(a); active != 0 || (a == rich && bal != 1000) || (a == poor && bal != 5) {
			t.Fatalf("a refused request changed the account: balance %d active %d", bal, active)
		}
		if runs := h.Do("GET", "/api/v1/runs", a.Key, nil).JSON(t)["data"].([]any); len(runs) != 0 {
			t.Fatalf("a refused request created runs: %v", runs)
		}
	}
	// The own brand context is accepted.
	run := h.Create(rich, map[string]any{"app_slug": "cold-email-writer", "input": ColdEmailRun()["input"], "brand_context_id": own})
	if out := h.WaitRun(rich, run); out["status"] != "completed" {
		t.Fatalf("run with own brand context: %v", out)
	}
}

func TestBrandContextOnlyForAppsThatAcceptOne(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	bc := h.Do("POST", "/api/v1/brand-contexts", a.Key, map[string]any{"name": "Acme"}).JSON(t)["brand_context_id"].(string)
	h.Do("PUT", "/admin/v1/apps/unpriced/price", AdminToken, map[string]any{"reason": "test", "credit_cost": 1})
	r := h.Do("POST", "/api/v1/runs", a.Key, map[string]any{"app_slug": "unpriced", "input": map[string]any{}, "brand_context_id": bc})
	if r.Status != 422 || r.ErrorCode(t) != "invalid_brand_context" {
		t.Fatalf("brand context on an App that takes none: %d %s", r.Status, r.Body)
	}
}

func TestEveryErrorIsTheEnvelope(t *testing.T) {
	h := Start(t)
	a := h.Account(0)
	cases := []struct {
		name, method, path, key string
		status                  int
		code                    string
	}{
		{"unknown route", "GET", "/api/v1/nope", a.Key, 404, "not_found"},
		{"wrong method", "DELETE", "/api/v1/runs", a.Key, 405, "method_not_allowed"},
		{"unknown run", "GET", "/api/v1/runs/run_aaaaaaaaaaaaaaaa", a.Key, 404, "run_not_found"},
		{"malformed run number", "GET", "/api/v1/runs/not-a-run.number", a.Key, 404, "run_not_found"},
		{"unknown capability", "GET", "/api/v1/capabilities/oss-growth", a.Key, 404, "app_not_found"},
		{"read without key", "GET", "/api/v1/account", "", 401, "unauthorized"},
		{"admin without token", "POST", "/admin/v1/accounts", "", 401, "unauthorized"},
		{"admin with an API key", "POST", "/admin/v1/accounts", a.Key, 401, "unauthorized"},
		{"grant to an unknown account", "POST", "/admin/v1/accounts/acct_aaaaaaaaaaaaaaaa/credits", AdminToken, 404, "account_not_found"},
		{"revoke an unknown key", "DELETE", "/admin/v1/keys/key_aaaaaaaaaaaaa", AdminToken, 404, "key_not_found"},
		{"price of an unknown App", "PUT", "/admin/v1/apps/nope/price", AdminToken, 404, "app_not_found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body any
			switch {
			case strings.HasSuffix(c.path, "/credits"):
				body = map[string]any{"amount": 5, "reason": "test"}
			case strings.HasSuffix(c.path, "/price"):
				body = map[string]any{"credit_cost": 5, "reason": "test"}
			case c.method == "POST":
				body = map[string]any{"email": "x@example.com"}
			}
			r := h.Do(c.method, c.path, c.key, body)
			if r.Status != c.status || r.ErrorCode(t) != c.code {
				t.Fatalf("got %d %s, want %d %s", r.Status, r.Body, c.status, c.code)
			}
		})
	}
	t.Run("body over 1 MiB", func(t *testing.T) {
		big := `{"app_slug":"cold-email-writer","input":{"proof_points":"` + strings.Repeat("x", 1<<20) + `"}}`
		r := h.Do("POST", "/api/v1/runs", a.Key, RawBody(big, "application/json"))
		if r.Status != 400 || r.ErrorCode(t) != "invalid_request" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
}

func TestAnotherAccountsRunIsNotFound(t *testing.T) {
	h := Start(t)
	owner, stranger := h.Account(100), h.Account(100)
	runNo := h.Create(owner, RunTestApp("ok"))
	for _, path := range []string{"/api/v1/runs/" + runNo, "/api/v1/runs/" + runNo + "/events"} {
		r := h.Do("GET", path, stranger.Key, nil)
		if r.Status != 404 || r.ErrorCode(t) != "run_not_found" {
			t.Fatalf("GET %s by another account: %d %s, want 404 run_not_found", path, r.Status, r.Body)
		}
	}
	if runs := h.Do("GET", "/api/v1/runs", stranger.Key, nil).JSON(t)["data"].([]any); len(runs) != 0 {
		t.Fatalf("another account's history shows the run: %v", runs)
	}
}

func TestRevokedKeyStopsWorkingAtOnce(t *testing.T) {
	h := Start(t)
	a := h.Account(100)
	second := h.Do("POST", "/admin/v1/accounts/"+a.ID+"/keys", AdminToken, nil)
	if second.Status != 201 {
		t.Fatalf("create key: %d %s", second.Status, second.Body)
	}
	k2 := Account{ID: a.ID, Key: second.JSON(t)["api_key"].(string), KeyID: second.JSON(t)["key_id"].(string)}
	if r := h.Do("GET", "/api/v1/account", k2.Key, nil); r.Status != 200 || r.JSON(t)["account_id"] != a.ID {
		t.Fatalf("second key does not reach the same account: %d %s", r.Status, r.Body)
	}
	if r := h.Do("DELETE", "/admin/v1/keys/"+a.KeyID, AdminToken, nil); r.Status != 204 {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	for _, req := range []struct{ method, path string }{{"GET", "/api/v1/account"}, {"POST", "/api/v1/runs"}} {
		var body any
		if req.method == "POST" {
			body = RunTestApp("ok")
		}
		if r := h.Do(req.method, req.path, a.Key, body); r.Status != 401 || r.ErrorCode(t) != "unauthorized" {
			t.Fatalf("%s %s with a revoked key: %d %s", req.method, req.path, r.Status, r.Body)
		}
	}
	if r := h.Do("GET", "/api/v1/account", k2.Key, nil); r.Status != 200 {
		t.Fatalf("revoking one key broke the other: %d", r.Status)
	}
	if r := h.Do("DELETE", "/admin/v1/keys/"+a.KeyID, AdminToken, nil); r.Status != 204 {
		t.Fatalf("revoking twice: %d %s", r.Status, r.Body)
	}
}

func TestCapabilitiesListRunnableAppsWithCurrentPrices(t *testing.T) {
	h := Start(t)
	a := h.Account(0)
	list := h.Do("GET", "/api/v1/capabilities", a.Key, nil)
	if list.Status != 200 {
		t.Fatalf("%d %s", list.Status, list.Body)
	}
	bySlug := map[string]map[string]any{}
	for _, e := range list.JSON(t)["data"].([]any) {
		m := e.(map[string]any)
		bySlug[m["slug"].(string)] = m
	}
	if _, ok := bySlug["oss-growth"]; ok {
		t.Fatal("oss-growth is listed although not runnable")
	}
	ce := bySlug["cold-email-writer"]
	if ce == nil || ce["credit_cost"] != float64(25) || ce["timeout_seconds"] != float64(900) || ce["retention_days"] != float64(30) || ce["retention_seconds"] != float64(30*86400) ||
		ce["accepts_brand_context"] != true || ce["input_schema"] == nil || ce["name"] == "" || ce["description"] == "" {
		t.Fatalf("cold-email-writer entry: %v", ce)
	}
	if u := bySlug["unpriced"]; u["credit_cost"] != nil || u["price_ready"] != false {
		t.Fatalf("an App with no price shows credit_cost %v price_ready %v", u["credit_cost"], u["price_ready"])
	}
	if r := h.Do("PUT", "/admin/v1/apps/cold-email-writer/price", AdminToken, map[string]any{"reason": "test", "credit_cost": 30}); r.Status != 200 {
		t.Fatalf("set price: %d %s", r.Status, r.Body)
	}
	one := h.Do("GET", "/api/v1/capabilities/cold-email-writer", a.Key, nil)
	if one.Status != 200 || one.JSON(t)["credit_cost"] != float64(30) {
		t.Fatalf("after a price change: %d %s", one.Status, one.Body)
	}
}

func TestPriceChangesApplyToNewRunsOnly(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(1000)
	first := h.Do("POST", "/api/v1/runs", a.Key, RunTestApp("hold")).JSON(t)
	h.Do("PUT", "/admin/v1/apps/"+TestAppSlug+"/price", AdminToken, map[string]any{"reason": "test", "credit_cost": 40})
	second := h.Do("POST", "/api/v1/runs", a.Key, RunTestApp("ok")).JSON(t)
	if first["credit_cost"] != float64(10) || second["credit_cost"] != float64(40) {
		t.Fatalf("credit_cost %v then %v, want 10 then 40", first["credit_cost"], second["credit_cost"])
	}
	h.ReleaseHeld()
	if run := h.WaitRun(a, first["run_no"].(string)); run["credit_cost"] != float64(10) {
		t.Fatalf("the first run's locked price moved: %v", run["credit_cost"])
	}
	h.WaitRun(a, second["run_no"].(string))
	if bal, _ := h.Balance(a); bal != 1000-10-40 {
		t.Fatalf("balance %d, want %d", bal, 1000-10-40)
	}
}

func TestRunHistoryIsNewestFirstAndPaginated(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(1000)
	var made []string
	for i := 0; i < 5; i++ {
		made = append(made, h.Create(a, RunTestApp("ok")))
	}
	var seen []string
	for _, run := range h.Pages(a, "/api/v1/runs?limit=2") {
		seen = append(seen, run["run_no"].(string))
	}
	if len(seen) != 5 {
		t.Fatalf("pages gave %d runs, want 5: %v", len(seen), seen)
	}
	for i := range seen {
		if seen[i] != made[len(made)-1-i] {
			t.Fatalf("history order %v, want newest first of %v", seen, made)
		}
	}
	if r := h.Do("GET", "/api/v1/runs?cursor=abc", a.Key, nil); r.Status != 400 || r.ErrorCode(t) != "invalid_request" {
		t.Fatalf("bad cursor: %d %s", r.Status, r.Body)
	}
	if r := h.Do("GET", "/api/v1/runs?limit=0", a.Key, nil); r.Status != 400 {
		t.Fatalf("limit 0: %d", r.Status)
	}
}

func TestAdminAPI(t *testing.T) {
	h := Start(t)
	a := h.Account(10)
	if r := h.Do("POST", "/admin/v1/accounts/"+a.ID+"/credits", AdminToken, map[string]any{"reason": "test", "amount": 15}); r.Status != 200 || r.JSON(t)["balance"] != float64(25) {
		t.Fatalf("grant: %d %s", r.Status, r.Body)
	}
	for _, bad := range []any{map[string]any{"amount": 0, "reason": "test"}, map[string]any{"amount": -5, "reason": "test"}} {
		if r := h.Do("POST", "/admin/v1/accounts/"+a.ID+"/credits", AdminToken, bad); r.Status != 422 || r.ErrorCode(t) != "invalid_input" {
			t.Fatalf("grant %v: %d %s", bad, r.Status, r.Body)
		}
	}
	if r := h.Do("POST", "/admin/v1/accounts/"+a.ID+"/credits", AdminToken, map[string]any{"reason": "test", "amount": "5"}); r.Status != 400 {
		t.Fatalf("grant with a string amount: %d %s", r.Status, r.Body)
	}
	if r := h.Do("POST", "/admin/v1/accounts", AdminToken, map[string]any{"email": "not-an-email"}); r.Status != 422 {
		t.Fatalf("bad email: %d %s", r.Status, r.Body)
	}
	if r := h.Do("PUT", "/admin/v1/apps/cold-email-writer/price", AdminToken, map[string]any{"reason": "test", "credit_cost": -1}); r.Status != 422 {
		t.Fatalf("negative price: %d %s", r.Status, r.Body)
	}
	if r := h.Do("GET", "/api/v1/account", a.Key, nil); r.JSON(t)["balance"] != float64(25) {
		t.Fatalf("account after grant: %s", r.Body)
	}
}

func TestTwoConcurrentCreatesThatCanAffordOnlyOne(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	for round := 0; round < 5; round++ {
		a := h.Account(10) // the test App costs 10
		var wg sync.WaitGroup
		codes := make([]int, 2)
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i] = h.Do("POST", "/api/v1/runs", a.Key, RunTestApp("hold")).Status
			}()
		}
		wg.Wait()
		created, refused := 0, 0
		for _, c := range codes {
			switch c {
			case 201:
				created++
			case 402:
				refused++
			}
		}
		if created != 1 || refused != 1 {
			t.Fatalf("round %d: statuses %v, want one 201 and one 402", round, codes)
		}
		if bal, active := h.Balance(a); bal != 0 || active != 1 {
			t.Fatalf("round %d: balance %d active %d, want 0 and 1", round, bal, active)
		}
	}
}

// A retention under a day is shown exactly (issue 47: retention_days
// said 0).
func TestACapabilityShowsItsRetentionExactly(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits), func(c *node.Config) {
		c.AppRetention = map[string]time.Duration{"cold-email-writer": 2 * time.Hour}
	})
	a := h.Account(0)
	c := h.Do("GET", "/api/v1/capabilities/cold-email-writer", a.Key, nil).JSON(t)
	if c["retention_days"] != float64(0) || c["retention_seconds"] != float64(7200) {
		t.Fatalf("a 2-hour retention: days %v, seconds %v", c["retention_days"], c["retention_seconds"])
	}
}
