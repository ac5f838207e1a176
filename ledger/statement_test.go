package ledger

import (
	"errors"
	"testing"
	"time"
)

// A correction goes either way and never below zero; it carries who made
// it and why, and is its own line type.
func TestAnAdjustmentCorrectsEitherWayButNeverBelowZero(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	open, _ := Open("a", "a@example.com", 10, t0, By{Actor: "admin:ops"})
	a := Apply(Account{}, open)
	by := By{Actor: "admin:finance", Reason: "over-grant"}
	if _, err := Adjust(a, -11, t0, by); !errors.Is(err, ErrBelowZero) {
		t.Fatalf("below zero: %v", err)
	}
	for _, bad := range []int64{0, MaxGrant + 1, -MaxGrant - 1} {
		if _, err := Adjust(a, bad, t0, by); !errors.Is(err, ErrBadAmount) {
			t.Errorf("adjust %d: %v", bad, err)
		}
	}
	ev, err := Adjust(a, -10, t0, by)
	if err != nil || ev.Balance != 0 || ev.Actor != "admin:finance" || ev.Reason != "over-grant" || ev.Type != CreditsAdjusted {
		t.Fatalf("adjust -10: %+v %v", ev, err)
	}
	if l, ok := LineOf(ev, 7, []byte("x")); !ok || l.Type != "adjustment" || l.Seq != 7 || l.Hash != Hash([]byte("x")) || l.Actor != "admin:finance" {
		t.Fatalf("line %+v", l)
	}
	if l, _ := LineOf(open, 1, nil); l.Type != "opening_grant" {
		t.Fatalf("the opening grant's line is %q", l.Type)
	}
	for _, r := range []string{"", "  ", "two\nlines", string(make([]byte, MaxReason+1))} {
		if ValidReason(r) {
			t.Errorf("reason %q accepted", r)
		}
	}
}

// A statement's opening balance plus its lines is its closing balance;
// the balance at a moment is the closing balance of a statement ending
// there and the opening balance of one starting there; totals and Apps
// sum the period only.
func TestAStatementOpensAndClosesAtTheBalancesOfItsEnds(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 11, d, 12, 0, 0, 0, time.UTC) }
	lines := []Line{
		{Type: "opening_grant", Amount: 100, Balance: 100, At: day(1)},
		{Type: "charge", Amount: -10, Balance: 90, At: day(2), AppSlug: "x"},
		{Type: "refund", Amount: 10, Balance: 100, At: day(3), AppSlug: "x"},
		{Type: "charge", Amount: -25, Balance: 75, At: day(4), AppSlug: "y"},
		{Type: "adjustment", Amount: -5, Balance: 70, At: day(5)},
	}
	whole := StatementOf("a", lines, time.Time{}, time.Time{})
	if whole.OpeningBalance != 0 || whole.ClosingBalance != 70 || !whole.Reconciles() || len(whole.Lines) != 5 {
		t.Fatalf("whole: %+v", whole)
	}
	cut := day(3).Add(time.Hour)
	before, after := StatementOf("a", lines, time.Time{}, cut), StatementOf("a", lines, cut, time.Time{})
	if before.ClosingBalance != 100 || after.OpeningBalance != 100 || !before.Reconciles() || !after.Reconciles() {
		t.Fatalf("around %s: %+v / %+v", cut, before, after)
	}
	if after.Totals["charge"] != -25 || after.Totals["refund"] != 0 || after.Totals["adjustment"] != -5 || len(after.ByApp) != 1 || after.ByApp[0].AppSlug != "y" {
		t.Fatalf("after: totals %v, by App %+v", after.Totals, after.ByApp)
	}
	if x := before.ByApp; len(x) != 1 || x[0] != (AppTotal{AppSlug: "x", Runs: 1, Charged: -10, Refunded: 10, Net: 0}) {
		t.Fatalf("before, by App %+v", x)
	}
	empty := StatementOf("a", lines, day(6), day(7))
	if empty.OpeningBalance != 70 || empty.ClosingBalance != 70 || len(empty.Lines) != 0 || !empty.Reconciles() {
		t.Fatalf("a period without lines: %+v", empty)
	}
	lines[2].Balance = 101 // a line that does not follow
	if StatementOf("a", lines, time.Time{}, time.Time{}).Reconciles() {
		t.Fatal("a broken statement reconciles")
	}
}
