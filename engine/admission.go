package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/apprun/apprun/ledger"
)

// concurrencyRetryAfter is the Retry-After of a concurrency_limit answer.
const concurrencyRetryAfter = 2 * time.Second

// Admission is the state a run's admission is decided on, as read: the
// account, the App's price, the client's ceiling and the limits.
type Admission struct {
	RunNo   string
	At      time.Time
	Account ledger.Account
	Price   Price
	// MaxCost is the client's max_credit_cost (nil: none).
	MaxCost *int64
	// OwnerActiveRuns is the ceiling of an account's active runs (0: none).
	OwnerActiveRuns int
	// PlatformFull says the platform's ceiling of active runs is set and
	// no slot of it is free.
	PlatformFull bool
	// Record is the hash of the run's record head (RecordHead.Hash), kept
	// on the charge.
	Record string
}

// Admit decides an admission: the charge to write, or the refusal as a
// typed error, in this order: a price the run cannot be admitted at (none
// yet, being recalibrated, above MaxCost: pricing_not_ready), a balance
// short of the price (insufficient_credits), the account's ceiling, then
// the platform's (concurrency_limit). The same state always gets the same
// answer; the service writes what it says, checked on the sequences the
// state was read at.
func Admit(a Admission) (ledger.Event, error) {
	p := a.Price
	switch {
	case p.Seq == 0:
		return ledger.Event{}, Errorf(CodePricingNotReady, "App %q has no price yet; retry later", p.Slug)
	case p.Recalibrating:
		return ledger.Event{}, Errorf(CodePricingNotReady, "the price of App %q is being recalibrated; retry later", p.Slug)
	case a.MaxCost != nil && p.CreditCost > *a.MaxCost:
		return ledger.Event{}, Errorf(CodePricingNotReady, "the price of %q is %d Credits, above your max_credit_cost of %d; nothing was charged",
			p.Slug, p.CreditCost, *a.MaxCost)
	}
	charge, err := ledger.Charge(a.Account, a.RunNo, p.Slug, p.CreditCost, a.OwnerActiveRuns, a.At)
	switch {
	case errors.Is(err, ledger.ErrInsufficientCredits):
		return ledger.Event{}, Errorf(CodeInsufficientCredits, "balance is %d Credits, the run costs %d", a.Account.Balance, p.CreditCost)
	case errors.Is(err, ledger.ErrTooManyActive):
		return ledger.Event{}, AccountAtCeiling()
	case err != nil:
		return ledger.Event{}, fmt.Errorf("engine: charge: %w", err)
	case a.PlatformFull:
		return ledger.Event{}, &Error{Code: CodeConcurrencyLimit, RetryAfter: concurrencyRetryAfter, Limit: LimitPlatformActiveRuns,
			Message: "the platform is at its maximum of active runs; wait for a run to finish"}
	}
	charge.PriceAt = p.At // the price in effect, on the statement line
	charge.Record = a.Record
	return charge, nil
}

// AccountAtCeiling is the refusal of a create whose account holds its
// most active runs.
func AccountAtCeiling() error {
	return &Error{Code: CodeConcurrencyLimit, RetryAfter: concurrencyRetryAfter, Limit: LimitAccountActiveRuns,
		Message: "this account already has the maximum of active runs; wait for one to finish"}
}
