package main

import (
	"strings"
	"testing"
)

// /metrics is Prometheus text with the request histogram by route and
// status and the domain's numbers, and moves with what the node does.
func TestMetricsCountRequestsRunsAndMoney(t *testing.T) {
	h := start(t, withLimits(noLimits))
	a := h.account(100)
	h.waitRun(a, h.create(a, testRun("ok")))
	failed := h.create(a, testRun("fail"))
	h.waitRun(a, failed)
	r := h.do("GET", "/metrics", "", nil)
	if r.Status != 200 {
		t.Fatalf("GET /metrics: %d", r.Status)
	}
	body := string(r.Body)
	for _, want := range []string{
		`apprun_http_request_duration_seconds_count{code="201",method="POST",route="/api/v1/runs"} 2`,
		`apprun_ledger_charges_total 2`,
		`apprun_ledger_refunds_total 1`,
		`apprun_runs{status="failed"} 1`,
		`apprun_runs{status="completed"} 1`,
		`apprun_ledger_settles_total 1`,
		`apprun_sse_clients `,
		`apprun_events_appended_total `,
		`apprun_active_runs `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, a.Key) || strings.Contains(body, failed) {
		t.Error("/metrics shows an API key or a run number")
	}
}

// Profiles are for the operator only.
func TestPprofNeedsTheAdminToken(t *testing.T) {
	h := start(t)
	a := h.account(1)
	for _, tc := range []struct {
		name, token string
		want        int
	}{{"none", "", 401}, {"an API key", a.Key, 401}, {"the admin token", testAdminToken, 200}} {
		if r := h.do("GET", "/debug/pprof/heap?debug=1", tc.token, nil); r.Status != tc.want {
			t.Errorf("pprof with %s: %d, want %d", tc.name, r.Status, tc.want)
		}
	}
}
