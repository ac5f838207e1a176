package service_test

import (
	"context"
	"sync"
	"testing"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/service"
)

func purchase(acct, ref string) service.Purchase {
	return service.Purchase{AccountID: acct, Ref: ref, Pack: "p100", Credits: 100, Paid: 500, Currency: "usd", PaymentIntent: "pi_" + ref}
}

// A paid purchase is granted once, however many notices arrive and
// however they race.
func TestAPurchaseIsGrantedOnceUnderConcurrentNotices(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t)
	ctx := context.Background()
	acct, err := e.OpenAccount(ctx, "buyer@example.com", 0, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if bought, err := e.Purchased(ctx, "cs_test_once"); bought || err != nil {
		t.Fatalf("before any notice: purchased %v, %v", bought, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := e.GrantPurchase(ctx, purchase(acct.AccountID, "cs_test_once"))
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				granted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	a, _, _ := e.Account(ctx, acct.AccountID)
	if granted != 1 || a.Balance != 100 {
		t.Fatalf("granted %d times, balance %d; want once and 100", granted, a.Balance)
	}
	if ok, err := e.GrantPurchase(ctx, purchase(acct.AccountID, "cs_test_once")); ok || err != nil {
		t.Fatalf("a later notice: granted %v, %v", ok, err)
	}
	if bought, err := e.Purchased(ctx, "cs_test_once"); !bought || err != nil {
		t.Fatalf("after the grant: purchased %v, %v", bought, err)
	}
	if bought, err := e.Purchased(ctx, "cs.bad>ref"); bought || err != nil {
		t.Fatalf("a reference that cannot be one: purchased %v, %v", bought, err)
	}
	if _, err := e.GrantPurchase(ctx, purchase(acct.AccountID, "cs.bad>ref")); engine.ErrorCode(err) != engine.CodeInvalidInput {
		t.Fatalf("a reference with subject characters: %v", err)
	}
}

// A refund revokes its share of the Credits, rounded up, once; the
// balance may go below zero; more than the purchase is never revoked.
func TestARefundRevokesItsShareOnce(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t)
	ctx := context.Background()
	acct, _ := e.OpenAccount(ctx, "refund@example.com", 0, ledger.By{Actor: "system:test", Reason: "test"})
	if _, err := e.GrantPurchase(ctx, purchase(acct.AccountID, "cs_test_r")); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		refunded, revoked, balance int64
	}{
		{125, 25, 75}, // a quarter refunded: 25 Credits
		{125, 0, 75},  // the same notice again: nothing more
		{250, 25, 50}, // half in all
		{999, 50, 0},  // more than was paid counts as all of it
		{999, 0, 0},
	} {
		got, err := e.RevokeRefunded(ctx, "pi_cs_test_r", step.refunded)
		a, _, _ := e.Account(ctx, acct.AccountID)
		if err != nil || got != step.revoked || a.Balance != step.balance {
			t.Fatalf("refunded %d: revoked %d (%v), balance %d; want %d and %d", step.refunded, got, err, a.Balance, step.revoked, step.balance)
		}
	}
	if _, err := e.RevokeRefunded(ctx, "pi_unknown", 10); err != service.ErrNoPurchase {
		t.Fatalf("an unknown payment: %v", err)
	}
	p, ok, _ := e.PurchaseOf(ctx, "cs_test_r")
	if !ok || p.Revoked != 100 || p.Refunded != 500 {
		t.Fatalf("purchase record %+v", p)
	}
}

// Credits spent before a refund leave the balance below zero.
func TestARevocationMayTakeTheBalanceBelowZero(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t)
	ctx := context.Background()
	acct, _ := e.OpenAccount(ctx, "spent@example.com", 0, ledger.By{Actor: "system:test", Reason: "test"})
	_, _ = e.GrantPurchase(ctx, purchase(acct.AccountID, "cs_test_spent"))
	price, err := e.CurrentPrice(ctx, "ok")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := e.AdmitAtPrice(ctx, acct.AccountID, "ok", price); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := e.RevokeRefunded(ctx, "pi_cs_test_spent", 500); err != nil || n != 100 {
		t.Fatalf("revoked %d, %v", n, err)
	}
	a, _, _ := e.Account(ctx, acct.AccountID)
	if a.Balance != -15 {
		t.Fatalf("balance %d, want -15", a.Balance)
	}
}

// Unmatched notices are kept once each, for an operator.
func TestUnmatchedPaymentsAreKeptOnce(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t)
	ctx := context.Background()
	for range 2 {
		if err := e.RecordUnmatched(ctx, service.Unmatched{EventID: "evt_1", Ref: "cs_x", Reason: "unknown account", Detail: "acct_nope"}); err != nil {
			t.Fatal(err)
		}
	}
	_ = e.RecordUnmatched(ctx, service.Unmatched{EventID: "evt_2", Ref: "cs_y", Reason: "unknown pack", Detail: "p999"})
	list, err := e.UnmatchedPayments(ctx)
	if err != nil || len(list) != 2 || list[0].Reason != "unknown account" {
		t.Fatalf("unmatched %+v %v", list, err)
	}
}
