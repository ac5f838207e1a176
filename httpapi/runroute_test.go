package httpapi_test

import (
	"net/http"
	"sort"
	"strings"
	"testing"

	. "github.com/apprun/apprun/node/nodetest"
)

// A run's GET is served ahead of the router (httpapi/runroute.go). It must
// be the router's route in all a client or an operator sees: a run number
// the fast path declines (not an id) reaches the same handler through the
// router, and the two answers carry the same envelope and the same
// headers (the read limit's among them); both are counted in /metrics
// under the route's template.
func TestARunsGETAheadOfTheRouterIsTheSameRoute(t *testing.T) {
	t.Parallel()
	h := Start(t) // the default limits: a read carries the read limit's headers
	a, other := h.Account(100), h.Account(100)
	runNo := h.Create(a, RunTestApp("ok"))
	h.WaitRun(a, runNo)
	for _, who := range []Account{a, other} {
		got := h.Do("GET", "/api/v1/runs/"+runNo, who.Key, nil)
		if who == a && (got.Status != 200 || got.JSON(t)["run_no"] != runNo || got.Header.Get("RateLimit-Remaining") == "") {
			t.Fatalf("the owner's GET: %d %v %s", got.Status, got.Header, got.Body)
		}
		if who == other && got.Status != 404 {
			t.Fatalf("another account's GET of the run: %d %s", got.Status, got.Body)
		}
	}

	fast := h.Do("GET", "/api/v1/runs/run_"+strings.Repeat("a", 26), a.Key, nil) // an id, no such run: the fast path
	routed := h.Do("GET", "/api/v1/runs/run_NOT-AN-ID", a.Key, nil)              // not an id: the router
	for name, r := range map[string]Response{"fast path": fast, "router": routed} {
		if r.Status != 404 || r.JSON(t)["error"].(map[string]any)["code"] != "run_not_found" {
			t.Errorf("%s: %d %s, want 404 run_not_found", name, r.Status, r.Body)
		}
	}
	if f, g := headerNames(fast.Header), headerNames(routed.Header); f != g {
		t.Errorf("headers differ:\nfast path %s\nrouter    %s", f, g)
	}
	if fast.Header.Get("RateLimit-Limit") != routed.Header.Get("RateLimit-Limit") || fast.Header.Get("RateLimit-Limit") == "" {
		t.Errorf("RateLimit-Limit: fast path %q, router %q", fast.Header.Get("RateLimit-Limit"), routed.Header.Get("RateLimit-Limit"))
	}

	metrics := string(h.Do("GET", "/metrics", "", nil).Body)
	for _, want := range []string{
		// the other account's, the fast path's and the router's
		`apprun_http_request_duration_seconds_count{code="404",method="GET",route="/api/v1/runs/{run_no}"} 3`,
		`apprun_http_request_duration_seconds_count{code="200",method="GET",route="/api/v1/runs/{run_no}"} `,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(metrics, `route="unmatched"`) {
		t.Error("/metrics counts a request under no route")
	}
}

// headerNames lists a response's header names, less those that differ
// between any two answers.
func headerNames(h http.Header) string {
	var names []string
	for k := range h {
		if k != "Date" && k != "Content-Length" && k != "X-Request-Id" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	return strings.Join(names, " ")
}
