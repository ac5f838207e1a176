package httpapi_test

import (
	"testing"

	. "github.com/apprun/apprun/node/nodetest"
)

func TestStatementListsGrantsChargesAndRefunds(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	h.Do("POST", "/admin/v1/accounts/"+a.ID+"/credits", AdminToken, map[string]any{"amount": 50})
	ok := h.Create(a, RunTestApp("ok"))
	h.WaitRun(a, ok)
	failed := h.Create(a, RunTestApp("fail"))
	h.WaitRun(a, failed)
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
	got := h.Pages(a, "/api/v1/account/ledger?limit=2")
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
	b := h.Account(0)
	if lines := h.Do("GET", "/api/v1/account/ledger", b.Key, nil).JSON(t)["data"].([]any); len(lines) != 0 {
		t.Fatalf("an account opened with 0 Credits has lines: %v", lines)
	}
}
