package service_test

import (
	"context"
	"errors"
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
	if _, err := e.RevokeRefunded(ctx, "pi.bad", 10); err != service.ErrNoPurchase {
		t.Fatalf("a payment that cannot be one: %v", err)
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

// A refund whose notice comes before its purchase's is held, and the
// purchase grants the net: a quarter refunded first grants three
// quarters of the pack, the line says why, and later refunds take only
// what is still owed. A refund of all of it grants nothing.
func TestARefundBeforeItsPurchaseIsTakenOffThePurchase(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t)
	ctx := context.Background()
	acct, _ := e.OpenAccount(ctx, "early@example.com", 0, ledger.By{Actor: "system:test", Reason: "test"})
	for _, refunded := range []int64{100, 125, 50} { // notices may repeat and come out of order
		if _, err := e.RevokeRefunded(ctx, "pi_cs_test_e", refunded); !errors.Is(err, service.ErrRefundHeld) {
			t.Fatalf("a refund before its purchase: %v", err)
		}
	}
	if granted, err := e.GrantPurchase(ctx, purchase(acct.AccountID, "cs_test_e")); err != nil || !granted {
		t.Fatalf("the purchase: %v %v", granted, err)
	}
	a, _, _ := e.Account(ctx, acct.AccountID)
	p, _, _ := e.PurchaseOf(ctx, "cs_test_e")
	if a.Balance != 75 || p.Refunded != 125 || p.Revoked != 25 {
		t.Fatalf("after a quarter refunded first: balance %d, record %+v; want 75, refunded 125, revoked 25", a.Balance, p)
	}
	if got, err := e.RevokeRefunded(ctx, "pi_cs_test_e", 250); err != nil || got != 25 {
		t.Fatalf("half refunded in all: revoked %d %v, want 25", got, err)
	}
	if granted, err := e.GrantPurchase(ctx, purchase(acct.AccountID, "cs_test_e")); err != nil || granted {
		t.Fatalf("the purchase's notice again: %v %v", granted, err)
	}
	if a, _, _ = e.Account(ctx, acct.AccountID); a.Balance != 50 {
		t.Fatalf("balance %d, want 50", a.Balance)
	}

	whole, _ := e.OpenAccount(ctx, "whole@example.com", 0, ledger.By{Actor: "system:test", Reason: "test"})
	if _, err := e.RevokeRefunded(ctx, "pi_cs_test_w", 500); !errors.Is(err, service.ErrRefundHeld) {
		t.Fatal(err)
	}
	if _, err := e.GrantPurchase(ctx, purchase(whole.AccountID, "cs_test_w")); err != nil {
		t.Fatal(err)
	}
	if a, _, _ := e.Account(ctx, whole.AccountID); a.Balance != 0 {
		t.Fatalf("a purchase refunded whole first granted %d", a.Balance)
	}
}

// A dispute takes back the Credits it covers down to a zero balance and
// records the rest as owed; a repeated notice changes nothing; a won
// dispute gives them back, a lost one keeps them.
func TestADisputeTakesItsCreditsAndAWonOneGivesThemBack(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t)
	ctx := context.Background()
	acct, _ := e.OpenAccount(ctx, "disputed@example.com", 0, ledger.By{Actor: "system:test", Reason: "test"})
	if _, err := e.GrantPurchase(ctx, purchase(acct.AccountID, "cs_test_d")); err != nil {
		t.Fatal(err)
	}
	// 60 of the 100 Credits spent (adjusted away), then the whole payment disputed.
	if _, _, err := e.AdjustCredits(ctx, acct.AccountID, -60, ledger.By{Actor: "admin:x", Reason: "spent"}); err != nil {
		t.Fatal(err)
	}
	for i, want := range [][2]int64{{40, 60}, {0, 0}} { // the notice again: nothing more
		taken, owed, err := e.DisputePurchase(ctx, "pi_cs_test_d", "dp_1", 500)
		if err != nil {
			t.Fatal(err)
		}
		a, _, _ := e.Account(ctx, acct.AccountID)
		if a.Balance != 0 {
			t.Fatalf("after the dispute: balance %d, want 0", a.Balance)
		}
		if taken != want[0] || owed != want[1] {
			t.Fatalf("notice %d: the dispute took %d and owes %d, want %d and %d", i+1, taken, owed, want[0], want[1])
		}
	}
	p, _, _ := e.PurchaseOf(ctx, "cs_test_d")
	if p.Dispute != "dp_1" || p.DisputeTaken != 40 || p.DisputeOwed != 60 {
		t.Fatalf("record %+v", p)
	}
	if back, err := e.CloseDispute(ctx, "pi_cs_test_d", "dp_other", 500, true); err != nil || back != 0 {
		t.Fatalf("another dispute's close: %d %v", back, err)
	}
	if back, err := e.CloseDispute(ctx, "pi_cs_test_d", "dp_1", 500, true); err != nil || back != 40 {
		t.Fatalf("won: %d %v", back, err)
	}
	if back, _ := e.CloseDispute(ctx, "pi_cs_test_d", "dp_1", 500, true); back != 0 {
		t.Fatalf("won twice: %d", back)
	}
	if a, _, _ := e.Account(ctx, acct.AccountID); a.Balance != 40 {
		t.Fatalf("after the dispute was won: %d, want 40", a.Balance)
	}

	lost, _ := e.OpenAccount(ctx, "lost@example.com", 0, ledger.By{Actor: "system:test", Reason: "test"})
	_, _ = e.GrantPurchase(ctx, purchase(lost.AccountID, "cs_test_l"))
	if taken, owed, err := e.DisputePurchase(ctx, "pi_cs_test_l", "dp_2", 250); err != nil || taken != 50 || owed != 0 {
		t.Fatalf("half disputed: %d %d %v", taken, owed, err)
	}
	if back, err := e.CloseDispute(ctx, "pi_cs_test_l", "dp_2", 250, false); err != nil || back != 0 {
		t.Fatalf("lost: %d %v", back, err)
	}
	if a, _, _ := e.Account(ctx, lost.AccountID); a.Balance != 50 {
		t.Fatalf("after a lost dispute of half: %d, want 50", a.Balance)
	}
	// A payment no purchase knows yet: held for its purchase; a reference
	// that cannot be a payment's: none.
	if _, _, err := e.DisputePurchase(ctx, "pi_nothing", "dp_3", 5); !errors.Is(err, service.ErrDisputeHeld) {
		t.Fatalf("a dispute of no purchase yet: %v", err)
	}
	if _, _, err := e.DisputePurchase(ctx, "pi.not.a.reference", "dp_4", 5); !errors.Is(err, service.ErrNoPurchase) {
		t.Fatalf("a dispute of no payment: %v", err)
	}
}

// A refund after a dispute takes only what the dispute left, so the two
// never take more Credits than the purchase gave.
func TestARefundAfterADisputeTakesOnlyWhatTheDisputeLeft(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t)
	ctx := context.Background()
	acct, _ := e.OpenAccount(ctx, "both@example.com", 0, ledger.By{Actor: "system:test", Reason: "test"})
	if _, err := e.GrantPurchase(ctx, purchase(acct.AccountID, "cs_test_b")); err != nil {
		t.Fatal(err)
	}
	if taken, _, err := e.DisputePurchase(ctx, "pi_cs_test_b", "dp_b", 300); err != nil || taken != 60 {
		t.Fatalf("dispute of 300 of 500: took %d, %v", taken, err)
	}
	// The whole payment refunded: 100 Credits' worth, of which the dispute took 60.
	if n, err := e.RevokeRefunded(ctx, "pi_cs_test_b", 500); err != nil || n != 40 {
		t.Fatalf("a whole refund after the dispute revoked %d (%v), want the 40 left", n, err)
	}
	if a, _, _ := e.Account(ctx, acct.AccountID); a.Balance != 0 {
		t.Fatalf("balance %d after the dispute and the refund, want 0", a.Balance)
	}
}

// A refund whose notice comes after a dispute's, for a payment refunded
// before it was disputed: the refund takes what the dispute did not, and
// a won dispute gives back only what no refund covers.
func TestAWonDisputeGivesBackNothingARefundCovers(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t)
	ctx := context.Background()
	acct, _ := e.OpenAccount(ctx, "overlap@example.com", 0, ledger.By{Actor: "system:test", Reason: "test"})
	if _, err := e.GrantPurchase(ctx, purchase(acct.AccountID, "cs_test_o")); err != nil {
		t.Fatal(err)
	}
	if taken, _, err := e.DisputePurchase(ctx, "pi_cs_test_o", "dp_o", 500); err != nil || taken != 100 {
		t.Fatalf("dispute of the whole payment: took %d, %v", taken, err)
	}
	if n, err := e.RevokeRefunded(ctx, "pi_cs_test_o", 500); err != nil || n != 0 {
		t.Fatalf("a whole refund after a whole dispute revoked %d (%v), want 0", n, err)
	}
	if back, err := e.CloseDispute(ctx, "pi_cs_test_o", "dp_o", 500, true); err != nil || back != 0 {
		t.Fatalf("the dispute won after a whole refund gave back %d (%v), want 0", back, err)
	}
	if a, _, _ := e.Account(ctx, acct.AccountID); a.Balance != 0 {
		t.Fatalf("balance %d: the refunded purchase's Credits came back", a.Balance)
	}
}

// A dispute's close whose opening's notice has not come stands for both:
// lost takes what the opening would have, won takes nothing, and the
// opening coming after changes nothing.
func TestADisputeClosedBeforeItsOpeningCameStandsForBoth(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t)
	ctx := context.Background()
	acct, _ := e.OpenAccount(ctx, "closefirst@example.com", 0, ledger.By{Actor: "system:test", Reason: "test"})
	for _, ref := range []string{"cs_test_cl", "cs_test_cw"} {
		if _, err := e.GrantPurchase(ctx, purchase(acct.AccountID, ref)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.CloseDispute(ctx, "pi_cs_test_cl", "dp_cl", 250, false); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CloseDispute(ctx, "pi_cs_test_cw", "dp_cw", 500, true); err != nil {
		t.Fatal(err)
	}
	for _, d := range [][2]string{{"pi_cs_test_cl", "dp_cl"}, {"pi_cs_test_cw", "dp_cw"}} {
		if taken, _, err := e.DisputePurchase(ctx, d[0], d[1], 500); err != nil || taken != 0 {
			t.Fatalf("the opening after its close: took %d, %v", taken, err)
		}
	}
	if a, _, _ := e.Account(ctx, acct.AccountID); a.Balance != 150 {
		t.Fatalf("balance %d, want 150: 200 bought, half of one lost to a dispute", a.Balance)
	}
}
