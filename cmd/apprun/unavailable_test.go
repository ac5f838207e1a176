package main

import (
	"testing"
)

func TestEventLogUnreachableIsInternalErrorAndWritesNothing(t *testing.T) {
	h := start(t)
	a := h.account(100)
	h.node.ns.Stop() // the embedded NATS server goes away under a running node
	for _, req := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/api/v1/runs", testRun("ok")},
		{"GET", "/api/v1/account", nil},
	} {
		r := h.do(req.method, req.path, a.Key, req.body)
		if r.Status != 503 || r.errorCode(t) != "internal_error" {
			t.Fatalf("%s %s with NATS down: %d %s, want 503 internal_error", req.method, req.path, r.Status, r.Body)
		}
	}
	if bal, active := h.balance(a); bal != 100 || active != 0 {
		t.Fatalf("a failed request changed the account: balance %d active %d", bal, active)
	}
}
