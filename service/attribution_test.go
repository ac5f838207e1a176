package service_test

import (
	"context"
	"testing"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
)

// Grants, adjustments and price changes need a reason, whatever surface
// calls them; an adjustment never takes a balance below zero; refused,
// none writes anything.
func TestCreditsAndPricesMoveOnlyWithAReason(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t)
	ctx := context.Background()
	acct := openAccount(t, e, 10)
	head := func() uint64 {
		h, err := e.LogHead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	before := head()
	for name, err := range map[string]error{
		"a grant without a reason":   second(e.GrantCredits(ctx, acct.AccountID, 5, ledger.By{Actor: "admin:x"})),
		"an adjustment on two lines": second(e.AdjustCredits(ctx, acct.AccountID, 5, ledger.By{Actor: "admin:x", Reason: "a\nb"})),
		"an adjustment below zero":   second(e.AdjustCredits(ctx, acct.AccountID, -11, ledger.By{Actor: "admin:x", Reason: "why"})),
		"a price without a reason":   func() error { _, _, err := e.SetPrice(ctx, "ok", 3, false, ledger.By{Actor: "admin:x"}); return err }(),
	} {
		if engine.ErrorCode(err) != engine.CodeInvalidInput {
			t.Errorf("%s: %v, want invalid_input", name, err)
		}
	}
	if h := head(); h != before {
		t.Fatalf("refusals wrote %d messages", h-before)
	}
	if balance, _, err := e.AdjustCredits(ctx, acct.AccountID, -10, ledger.By{Actor: "admin:x", Reason: "why"}); err != nil || balance != 0 {
		t.Fatalf("an adjustment to zero: %d %v", balance, err)
	}
	if _, _, err := e.SetPrice(ctx, "ok", 3, false, ledger.By{Actor: "admin:x", Reason: "cost"}); err != nil {
		t.Fatal(err)
	}
	prices, err := e.PriceHistory(ctx, "ok")
	if err != nil || len(prices) < 1 || prices[len(prices)-1].Actor != "admin:x" || prices[len(prices)-1].Reason != "cost" {
		t.Fatalf("price history %+v %v", prices, err)
	}
}

func second(_ int64, _ uint64, err error) error { return err }
