package main

import (
	"testing"
)

func TestStatementListsGrantsChargesAndRefunds(t *testing.T) {
	h := start(t, withLimits(noLimits))
	a := h.account(100)
	h.do("POST", "/admin/v1/accounts/"+a.ID+"/credits", testAdminToken, map[string]any{"amount": 50})
	ok := h.create(a, testRun("ok"))
	h.waitRun(a, ok)
	failed := h.create(a, testRun("fail"))
	h.waitRun(a, failed)
	want := []struct {
		typ         string
		amount, bal float64
		runNo       string
	}{
		{"refund", 10, 140, failed},
		{"charge", -10, 130, failed},
		{"charge", -10, 140, ok},
		{"grant", 50, 150, ""},
		{"grant", 100, 100, ""},
	}
	got := h.pages(a, "/api/v1/account/ledger?limit=2")
	if len(got) != len(want) {
		t.Fatalf("statement has %d lines, want %d: %v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		run, _ := g["run_no"].(string)
		if g["type"] != w.typ || g["amount"] != w.amount || g["balance"] != w.bal || run != w.runNo || g["at"] == nil {
			t.Errorf("line %d: %v, want %s %v balance %v run %q", i, g, w.typ, w.amount, w.bal, w.runNo)
		}
	}
	// Another account sees only its own lines.
	b := h.account(0)
	if lines := h.do("GET", "/api/v1/account/ledger", b.Key, nil).json(t)["data"].([]any); len(lines) != 0 {
		t.Fatalf("an account opened with 0 Credits has lines: %v", lines)
	}
}
