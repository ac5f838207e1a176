package engine_test

import (
	"errors"
	"testing"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
)

// Admit is a pure decision: the same state always gets the same answer,
// refusals come in a fixed order, and only an admission it allows is
// charged, at the price it was read at.
func TestAdmitDecidesFromStateAlone(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	acct := ledger.Account{ID: "acct_a", Balance: 10, Active: 1}
	price := engine.Price{Slug: "app", CreditCost: 4, Seq: 7}
	three := int64(3)
	cases := []struct {
		name  string
		with  func(*engine.Admission)
		code  engine.Code
		retry bool
	}{
		{"admitted", func(*engine.Admission) {}, "", false},
		{"no price yet", func(a *engine.Admission) { a.Price.Seq = 0 }, engine.CodePricingNotReady, false},
		{"recalibrating", func(a *engine.Admission) { a.Price.Recalibrating = true }, engine.CodePricingNotReady, false},
		{"above max_credit_cost", func(a *engine.Admission) { a.MaxCost = &three }, engine.CodePricingNotReady, false},
		{"short", func(a *engine.Admission) { a.Account.Balance = 3 }, engine.CodeInsufficientCredits, false},
		{"owner ceiling", func(a *engine.Admission) { a.OwnerActiveRuns = 1 }, engine.CodeConcurrencyLimit, true},
		{"platform full", func(a *engine.Admission) { a.PlatformFull = true }, engine.CodeConcurrencyLimit, true},
		// The order of refusals: the price before the balance, the
		// balance before the ceilings.
		{"price before balance", func(a *engine.Admission) { a.Price.Recalibrating, a.Account.Balance = true, 0 }, engine.CodePricingNotReady, false},
		{"balance before ceilings", func(a *engine.Admission) { a.Account.Balance, a.OwnerActiveRuns, a.PlatformFull = 0, 1, true }, engine.CodeInsufficientCredits, false},
	}
	for _, c := range cases {
		a := engine.Admission{RunNo: "run_x", At: at, Account: acct, Price: price}
		c.with(&a)
		charge, err := engine.Admit(a)
		again, err2 := engine.Admit(a)
		if engine.ErrorCode(err) != engine.ErrorCode(err2) || charge != again {
			t.Errorf("%s: two answers for one state: %v / %v", c.name, err, err2)
		}
		if c.code == "" {
			if err != nil {
				t.Errorf("%s: refused: %v", c.name, err)
				continue
			}
			if charge.Type != ledger.RunCharged || charge.Amount != -4 || charge.Balance != 6 || charge.RunNo != "run_x" || !charge.At.Equal(at) {
				t.Errorf("%s: charge %+v, want 4 Credits of run_x at %v leaving 6", c.name, charge, at)
			}
			continue
		}
		if engine.ErrorCode(err) != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
		if charge != (ledger.Event{}) {
			t.Errorf("%s: refused, yet a charge %+v", c.name, charge)
		}
		var e *engine.Error
		if errors.As(err, &e) && (e.RetryAfter > 0) != c.retry {
			t.Errorf("%s: Retry-After %v", c.name, e.RetryAfter)
		}
	}
}
