package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apprun/apprun/engine"
)

// logHead is the sequence of the newest message in the node's log.
func (h *harness) logHead() uint64 {
	h.t.Helper()
	head, err := h.node.Engine().LogHead(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return head
}

// keyUsed waits until the key's last use is recorded (a write of its
// own, at most once a minute a key), so that what follows is measured
// without it.
func (h *harness) keyUsed(a account) {
	h.t.Helper()
	h.do("GET", "/api/v1/account", a.Key, nil)
	waitFor(h.t, 10*time.Second, "the key's use recorded", func() bool {
		k, err := h.node.Reads().KeyByID(a.KeyID)
		return err == nil && !k.LastUsedAt.IsZero()
	})
}

// A create refused for any reason writes nothing to the log, with or
// without an Idempotency-Key: the key's record was written before any
// check and kept 25 hours, so one key refused 72,000 times in 90 s grew
// the log by 48 MiB, about 2 GB an hour, through every limit.
func TestARefusedCreateWritesNothing(t *testing.T) {
	t.Parallel()
	h := start(t, withLimits(engine.Limits{CreatePerMinute: 3, ReadsPerMinute: 1000}))
	a, broke := h.account(1000), h.account(0)
	for range 3 { // the creation window, full; the runs ended
		h.waitRun(a, h.create(a, testRun("ok")))
	}
	h.keyUsed(a)
	h.keyUsed(broke)
	head := h.logHead()
	for i, c := range []struct {
		key    string
		body   any
		status int
		code   string
	}{
		{a.Key, raw{`{"app_slug":`, "application/json"}, 400, "invalid_request"},
		{"ak_not_a_key", testRun("ok"), 401, "unauthorized"},
		{broke.Key, testRun("ok"), 402, "insufficient_credits"},
		{a.Key, map[string]any{"app_slug": "no-such-app", "input": map[string]any{}}, 404, "app_not_found"},
		{a.Key, map[string]any{"app_slug": "unpriced", "input": map[string]any{}}, 409, "pricing_not_ready"},
		{a.Key, testRun("nonsense"), 422, "invalid_input"},
		{a.Key, testRun("ok"), 429, "rate_limited"},
	} {
		for try := range 3 {
			r := h.do("POST", "/api/v1/runs", c.key, c.body, "Idempotency-Key", fmt.Sprintf("refused-%d-%d", i, try))
			if r.Status != c.status || r.errorCode(t) != c.code {
				t.Fatalf("create %d: %d %s, want %d %s", i, r.Status, r.Body, c.status, c.code)
			}
		}
		if now := h.logHead(); now != head {
			t.Fatalf("creates refused with %d %s wrote %d messages to the log", c.status, c.code, now-head)
		}
	}
}
