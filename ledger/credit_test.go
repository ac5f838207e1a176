package ledger

import (
	"errors"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func TestChargeDecidesOnBalanceThenActiveRuns(t *testing.T) {
	cases := []struct {
		name      string
		acct      Account
		cost      int64
		maxActive int
		want      error
	}{
		{"affordable", Account{ID: "a", Balance: 25}, 25, 3, nil},
		{"one credit short", Account{ID: "a", Balance: 24}, 25, 3, ErrInsufficientCredits},
		{"at the active ceiling", Account{ID: "a", Balance: 100, Active: 3}, 25, 3, ErrTooManyActive},
		{"balance is checked before the ceiling", Account{ID: "a", Balance: 0, Active: 3}, 25, 3, ErrInsufficientCredits},
		{"no ceiling when zero", Account{ID: "a", Balance: 100, Active: 50}, 25, 0, nil},
		{"free run with empty balance", Account{ID: "a"}, 0, 3, nil},
		{"negative cost refused", Account{ID: "a", Balance: 10}, -1, 3, ErrBadAmount},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev, err := Charge(c.acct, "run_x", "app", c.cost, c.maxActive, t0)
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if err != nil {
				return
			}
			if ev.Balance != c.acct.Balance-c.cost || ev.Active != c.acct.Active+1 || ev.Amount != -c.cost {
				t.Fatalf("charge event %+v does not carry the state after it", ev)
			}
		})
	}
}

func TestEveryChargeEndsInSettleOrRefund(t *testing.T) {
	open, _ := Open("a", "a@example.com", 100, t0, By{})
	a := Apply(Account{}, open)
	c1, _ := Charge(a, "r1", "app", 25, 3, t0)
	a = Apply(a, c1)
	c2, _ := Charge(a, "r2", "app", 25, 3, t0)
	a = Apply(a, c2)
	if a.Balance != 50 || a.Active != 2 {
		t.Fatalf("after two charges: %+v", a)
	}
	s, err := Settle(a, "r1", "app", t0)
	if err != nil {
		t.Fatal(err)
	}
	a = Apply(a, s)
	r, err := Refund(a, "r2", "app", 25, t0)
	if err != nil {
		t.Fatal(err)
	}
	a = Apply(a, r)
	if a.Balance != 75 || a.Active != 0 {
		t.Fatalf("settled one and refunded one: %+v, want balance 75, active 0", a)
	}
	if _, err := Refund(a, "r3", "app", 25, t0); !errors.Is(err, ErrNoActiveRun) {
		t.Fatalf("refund with no active run: %v", err)
	}
	if _, err := Settle(a, "r3", "app", t0); !errors.Is(err, ErrNoActiveRun) {
		t.Fatalf("settle with no active run: %v", err)
	}
}

func TestGrantBounds(t *testing.T) {
	a := Account{ID: "a", Balance: MaxBalance - 10}
	for _, amount := range []int64{0, -5, MaxGrant + 1} {
		if _, err := Grant(Account{ID: "a"}, amount, t0, By{}); !errors.Is(err, ErrBadAmount) {
			t.Errorf("grant %d: %v, want ErrBadAmount", amount, err)
		}
	}
	if _, err := Grant(a, 11, t0, By{}); !errors.Is(err, ErrBalanceOverflow) {
		t.Errorf("grant past MaxBalance: %v", err)
	}
	if ev, err := Grant(a, 10, t0, By{}); err != nil || ev.Balance != MaxBalance {
		t.Errorf("grant up to MaxBalance: %+v %v", ev, err)
	}
}

func TestSnapshotAgreesWithFold(t *testing.T) {
	open, _ := Open("a", "a@example.com", 40, t0, By{})
	events := []Event{open}
	a := Apply(Account{}, open)
	for i := 0; i < 5; i++ {
		var ev Event
		var err error
		switch i % 3 {
		case 0:
			ev, err = Grant(a, 7, t0, By{})
		case 1:
			ev, err = Charge(a, "r", "app", 5, 0, t0)
		case 2:
			ev, err = Refund(a, "r", "app", 5, t0)
		}
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
		a = Apply(a, ev)
	}
	var folded Account
	for _, ev := range events {
		folded = Apply(folded, ev)
		if folded.Balance != ev.Balance || folded.Active != ev.Active {
			t.Fatalf("event %s carries %d/%d, fold gives %d/%d", ev.Type, ev.Balance, ev.Active, folded.Balance, folded.Active)
		}
	}
}

// BenchmarkChargeCheck measures the ledger's decision at admission: the
// balance and active-run checks and the charge event they produce.
//
//	go test ./ledger -run '^$' -bench ChargeCheck
func BenchmarkChargeCheck(b *testing.B) {
	a := Account{ID: "acct_x", Balance: 1_000_000, Active: 1}
	at := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Charge(a, "run_x", "app", 5, 3, at); err != nil {
			b.Fatal(err)
		}
	}
}

// A purchase adds its Credits with its reference; a revocation takes them
// back and may leave the balance below zero; both are statement lines
// naming the payment.
func TestPurchasesAndRevocations(t *testing.T) {
	at := time.Now()
	a := Account{ID: "acct_1", Balance: 10}
	p, err := Purchase(a, 100, "cs_test_1", "p100", 500, "usd", at)
	if err != nil || p.Balance != 110 || p.Amount != 100 || p.Ref != "cs_test_1" {
		t.Fatalf("purchase: %+v %v", p, err)
	}
	a = Snapshot(p, a)
	a.Balance -= 105 // spent
	r, err := Revoke(a, 100, "cs_test_1", 500, "usd", at)
	if err != nil || r.Balance != -95 || r.Amount != -100 {
		t.Fatalf("revoke: %+v %v", r, err)
	}
	if l, ok := LineOf(r, 1, nil); !ok || l.Type != "revocation" || l.Reference != "cs_test_1" {
		t.Fatalf("revocation line: %+v", l)
	}
	if l, ok := LineOf(p, 1, nil); !ok || l.Type != "purchase" || l.Reference != "cs_test_1" {
		t.Fatalf("purchase line: %+v", l)
	}
	for _, bad := range []func() error{
		func() error { _, err := Purchase(a, -1, "cs", "p", 1, "usd", at); return err },
		func() error { _, err := Purchase(a, 1, "", "p", 1, "usd", at); return err },
		func() error { _, err := Revoke(a, 0, "cs", 1, "usd", at); return err },
	} {
		if bad() == nil {
			t.Error("a bad purchase or revocation was accepted")
		}
	}
}
