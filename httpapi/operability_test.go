package httpapi_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"
)

// /metrics is Prometheus text with the request histogram by route and
// status and the domain's numbers, and moves with what the node does.
func TestMetricsCountRequestsRunsAndMoney(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	h.WaitRun(a, h.Create(a, RunTestApp("ok")))
	failed := h.Create(a, RunTestApp("fail"))
	h.WaitRun(a, failed)
	wants := []string{
		`apprun_http_request_duration_seconds_count{code="201",method="POST",route="/api/v1/runs"} 2`,
		`apprun_ledger_charges_total 2`,
		`apprun_ledger_refunds_total 1`,
		`apprun_runs{status="failed"} 1`,
		`apprun_runs{status="completed"} 1`,
		`apprun_ledger_settles_total 1`,
		`apprun_sse_clients `,
		`apprun_events_appended_total `,
		`apprun_active_runs `,
		`apprun_read_models_applied_seq `,
	}
	// The stream shows a run's end as soon as the log stores it; the
	// executor counts the settle or refund when the log's answer reaches
	// it, a moment later (under load, after this test's read): a scrape
	// may come between the two. Scrape until the counts arrive.
	var body string
	var missing []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r := h.Do("GET", "/metrics", "", nil)
		if r.Status != 200 {
			t.Fatalf("GET /metrics: %d", r.Status)
		}
		body, missing = string(r.Body), nil
		for _, want := range wants {
			if !strings.Contains(body, want) {
				missing = append(missing, want)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, m := range missing {
		t.Errorf("/metrics lacks %q", m)
	}
	if strings.Contains(body, a.Key) || strings.Contains(body, failed) {
		t.Error("/metrics shows an API key or a run number")
	}
}

// Profiles are for the operator only.
func TestPprofNeedsTheAdminToken(t *testing.T) {
	t.Parallel()
	h := Start(t)
	a := h.Account(1)
	for _, tc := range []struct {
		name, token string
		want        int
	}{{"none", "", 401}, {"an API key", a.Key, 401}, {"the admin token", AdminToken, 200}} {
		if r := h.Do("GET", "/debug/pprof/heap?debug=1", tc.token, nil); r.Status != tc.want {
			t.Errorf("pprof with %s: %d, want %d", tc.name, r.Status, tc.want)
		}
	}
}

// A method is a label of the request histogram, and a client chooses it:
// made-up methods are counted together as "other", so that they cannot
// grow /metrics (and the node's memory) a series at a time.
func TestMetricsCountMadeUpMethodsTogether(t *testing.T) {
	t.Parallel()
	h := Start(t)
	const n = 20
	for i := range n {
		for _, path := range []string{"/api/v1/runs", "/debug/pprof/", "/mcp", "/", "/healthz"} {
			h.Do(fmt.Sprintf("MADEUP%d", i), path, "", nil)
		}
	}
	h.Do("GET", "/api/v1/runs", "", nil)
	r := h.Do("GET", "/metrics", "", nil)
	body := string(r.Body)
	if strings.Contains(body, "MADEUP") {
		t.Errorf("/metrics has a series for each made-up method:\n%s", grepLines(body, "MADEUP"))
	}
	for _, want := range []string{
		fmt.Sprintf(`apprun_http_request_duration_seconds_count{code="401",method="other",route="/debug/pprof/"} %d`, n),
		`apprun_http_request_duration_seconds_count{code="401",method="GET",route="/api/v1/runs"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, grepLines(body, "apprun_http_request_duration_seconds_count"))
		}
	}
}

// grepLines returns body's lines that hold s.
func grepLines(body, s string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// The request histogram counts every surface, not only the API's routes:
// the website's pages by their templates, MCP as /mcp, and what no route
// takes (404, 405) as "unmatched".
func TestMetricsCountEverySurface(t *testing.T) {
	t.Parallel()
	h := Start(t)
	a := h.Account(100)
	h.Do("GET", "/apps", "", nil)
	h.Do("GET", "/apps/cold-email-writer", "", nil)
	h.Do("GET", "/no-such-page", "", nil)
	h.Do("GET", "/api/v1/nope", "", nil)
	h.Do("PUT", "/healthz", "", nil)
	h.Do("POST", "/mcp", a.Key, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Accept", "application/json, text/event-stream")
	h.Do("POST", "/mcp", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Accept", "application/json, text/event-stream")
	body := string(h.Do("GET", "/metrics", "", nil).Body)
	for _, want := range []string{
		`apprun_http_request_duration_seconds_count{code="200",method="GET",route="/apps"} 1`,
		`apprun_http_request_duration_seconds_count{code="200",method="GET",route="/apps/{slug}"} 1`,
		`apprun_http_request_duration_seconds_count{code="404",method="GET",route="unmatched"} 2`,
		`apprun_http_request_duration_seconds_count{code="405",method="PUT",route="unmatched"} 1`,
		`apprun_http_request_duration_seconds_count{code="200",method="POST",route="/mcp"} 1`,
		`apprun_http_request_duration_seconds_count{code="401",method="POST",route="/mcp"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, grepLines(body, "apprun_http_request_duration_seconds_count"))
		}
	}
}
