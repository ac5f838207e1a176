package ledger

import (
	"errors"
	"strings"
	"time"
	"unicode/utf8"
)

// EventType names what happened to an account, in the past tense.
type EventType string

// Account event types.
const (
	AccountOpened  EventType = "account_opened"  // Amount = opening grant
	CreditsGranted EventType = "credits_granted" // Amount > 0
	RunCharged     EventType = "run_charged"     // Amount < 0, Active+1
	RunSettled     EventType = "run_settled"     // run completed: Amount 0, Active-1
	RunRefunded    EventType = "run_refunded"    // run failed: Amount = +charge, Active-1
	// CreditsPurchased: Credits bought (a Stripe Checkout Session, named by
	// Ref), Amount > 0, with what was paid (Paid, in Currency's smallest
	// unit) and the pack.
	CreditsPurchased EventType = "credits_purchased"
	// CreditsRevoked: Credits taken back because a purchase was refunded
	// (Ref names the purchase), Amount < 0. The only event that may take
	// a balance below zero.
	CreditsRevoked EventType = "credits_revoked"
	// CreditsAdjusted: an operator's correction, Amount ≠ 0 in either
	// direction, never taking the balance below zero; Reason says why.
	CreditsAdjusted EventType = "credits_adjusted"
	// CreditsDisputed: the Credits a payment dispute covers (Ref names the
	// purchase), taken back down to a zero balance: Amount ≤ 0, and Owed
	// the rest, a debt the account owes until the dispute is won.
	CreditsDisputed EventType = "credits_disputed"
	// CreditsReinstated: a won dispute's Credits given back, Amount ≥ 0;
	// its debt is cleared.
	CreditsReinstated EventType = "credits_reinstated"
)

// Version is the schema version of Event.
const Version = 1

// MaxGrant bounds one grant, and MaxBalance a balance, so sums never overflow.
const (
	MaxGrant   int64 = 1_000_000_000
	MaxBalance int64 = 1_000_000_000_000
)

// Event is one entry of an account's log. Balance and Active are the state
// after the event.
type Event struct {
	Type      EventType `json:"type"`
	V         int       `json:"v"`
	At        time.Time `json:"at"`
	AccountID string    `json:"account_id"`
	Email     string    `json:"email,omitempty"`
	Amount    int64     `json:"amount"`
	RunNo     string    `json:"run_no,omitempty"`
	// App is the run's App, on its charge, settle and refund: the ledger
	// keeps it, so a statement names it after the run's log expired.
	App string `json:"app_slug,omitempty"`
	// PriceAt is a charge's price in effect: the time of the App's price
	// event it was charged at (GET /admin/v1/apps/{slug}/prices lists each
	// with its time, actor and reason).
	PriceAt time.Time `json:"price_at,omitzero"`
	// Record is a charge's run record head hash (engine.RecordHead): an
	// exported record matches its charge after the run is gone.
	Record  string `json:"record,omitempty"`
	Balance int64  `json:"balance"`
	Active  int    `json:"active"`
	// Ref, Pack, Paid and Currency are a purchase's or revocation's
	// reference: the Stripe Checkout Session, the pack, and what was paid
	// (or refunded) in the currency's smallest unit.
	Ref      string `json:"ref,omitempty"`
	Pack     string `json:"pack,omitempty"`
	Paid     int64  `json:"paid,omitempty"`
	Currency string `json:"currency,omitempty"`
	// PaymentIntent is a purchase's Stripe PaymentIntent, when it has one.
	PaymentIntent string `json:"payment_intent,omitempty"`
	// Prev is the hash of the event before this one on its account ("":
	// the first), and Sig the ledger key's signature (chain.go).
	Prev string `json:"prev,omitempty"`
	Sig  string `json:"sig,omitempty"`
	// Owed is what a dispute could not take from the balance: a debt.
	Owed int64 `json:"owed,omitempty"`
	// Actor is who wrote the event (By.Actor) and Reason why, when an
	// operator gave one. Both are signed with the rest.
	Actor  string `json:"actor,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// By is who writes an event and why: the actor, for example
// "admin:finance", "web:<account id>", "stripe:<event id>" or
// "system:<what>", and the reason an operator gave.
type By struct {
	Actor, Reason string
}

// MaxReason bounds a reason, in bytes.
const MaxReason = 500

// ValidReason says whether a reason is given, bounded and on one line.
func ValidReason(r string) bool {
	return strings.TrimSpace(r) != "" && len(r) <= MaxReason && utf8.ValidString(r) && !strings.ContainsAny(r, "\r\n")
}

// sign is e with b's actor and reason.
func (b By) sign(e Event) Event {
	e.Actor, e.Reason = b.Actor, b.Reason
	return e
}

// Account is the state of one account.
type Account struct {
	ID        string    `json:"account_id"`
	Email     string    `json:"email"`
	Balance   int64     `json:"balance"`
	Active    int       `json:"active_runs"`
	CreatedAt time.Time `json:"created_at"`
	// Head is the hash of the account's newest event, as read from the
	// log: the Prev of the next (chain.go).
	Head string `json:"-"`
}

// Decision errors: expected refusals, not faults.
var (
	ErrInsufficientCredits = errors.New("ledger: balance below the credit cost")
	ErrTooManyActive       = errors.New("ledger: active-run limit reached")
	ErrBadAmount           = errors.New("ledger: amount out of range")
	ErrBalanceOverflow     = errors.New("ledger: balance would exceed the maximum")
	ErrNoActiveRun         = errors.New("ledger: no active run to end")
	ErrBelowZero           = errors.New("ledger: the adjustment would take the balance below zero")
)

// Apply folds e into a: a pure function of (state, event).
func Apply(a Account, e Event) Account {
	switch e.Type {
	case AccountOpened:
		a = Account{ID: e.AccountID, Email: e.Email, CreatedAt: e.At}
		a.Balance = e.Amount
	case CreditsGranted, CreditsPurchased, CreditsRevoked, CreditsAdjusted, CreditsDisputed, CreditsReinstated:
		a.Balance += e.Amount
	case RunCharged:
		a.Balance += e.Amount
		a.Active++
	case RunSettled:
		a.Active--
	case RunRefunded:
		a.Balance += e.Amount
		a.Active--
	}
	return a
}

// Open returns the event opening an account with an opening grant.
func Open(id, email string, credits int64, at time.Time, by By) (Event, error) {
	if credits < 0 || credits > MaxGrant {
		return Event{}, ErrBadAmount
	}
	return stamp(Account{}, by.sign(Event{Type: AccountOpened, AccountID: id, Email: email, Amount: credits, At: at})), nil
}

// Grant returns the event adding amount Credits to a.
func Grant(a Account, amount int64, at time.Time, by By) (Event, error) {
	if amount <= 0 || amount > MaxGrant {
		return Event{}, ErrBadAmount
	}
	if a.Balance+amount > MaxBalance {
		return Event{}, ErrBalanceOverflow
	}
	return stamp(a, by.sign(Event{Type: CreditsGranted, AccountID: a.ID, Amount: amount, At: at})), nil
}

// Adjust returns the event correcting a's balance by amount, in either
// direction: never to below zero (ErrBelowZero), nor above MaxBalance.
func Adjust(a Account, amount int64, at time.Time, by By) (Event, error) {
	if amount == 0 || amount > MaxGrant || amount < -MaxGrant {
		return Event{}, ErrBadAmount
	}
	if a.Balance+amount < 0 {
		return Event{}, ErrBelowZero
	}
	if a.Balance+amount > MaxBalance {
		return Event{}, ErrBalanceOverflow
	}
	return stamp(a, by.sign(Event{Type: CreditsAdjusted, AccountID: a.ID, Amount: amount, At: at})), nil
}

// Purchase adds the Credits a payment bought: a pack's credits (less
// any the payment's refunds took before its notice came: 0 when it was
// refunded whole), the payment's reference (ref), and what was paid.
func Purchase(a Account, credits int64, ref, pack string, paid int64, currency string, at time.Time) (Event, error) {
	if credits < 0 || credits > MaxGrant || ref == "" || paid < 0 {
		return Event{}, ErrBadAmount
	}
	if a.Balance+credits > MaxBalance {
		return Event{}, ErrBalanceOverflow
	}
	return stamp(a, Event{Type: CreditsPurchased, AccountID: a.ID, Amount: credits, At: at,
		Ref: ref, Pack: pack, Paid: paid, Currency: currency}), nil
}

// Revoke takes back credits of the purchase ref, whose payment was
// refunded (refunded, in the currency's smallest unit). The balance may
// go below zero: the Credits were spent before the refund. Runs are then
// refused (insufficient_credits) until a grant or purchase makes it
// positive again.
func Revoke(a Account, credits int64, ref string, refunded int64, currency string, at time.Time) (Event, error) {
	if credits <= 0 || credits > MaxGrant || ref == "" {
		return Event{}, ErrBadAmount
	}
	return stamp(a, Event{Type: CreditsRevoked, AccountID: a.ID, Amount: -credits, At: at,
		Ref: ref, Paid: refunded, Currency: currency}), nil
}

// Dispute takes back covered Credits of the purchase ref, whose payment
// is disputed (disputed, in the currency's smallest unit): as many as
// the balance holds, never below zero; the rest is Owed.
func Dispute(a Account, covered int64, ref string, disputed int64, currency string, at time.Time) (Event, error) {
	if covered < 0 || covered > MaxGrant || ref == "" {
		return Event{}, ErrBadAmount
	}
	take := min(covered, max(a.Balance, 0))
	return stamp(a, Event{Type: CreditsDisputed, AccountID: a.ID, Amount: -take, Owed: covered - take, At: at,
		Ref: ref, Paid: disputed, Currency: currency}), nil
}

// Reinstate gives back the credits a won dispute of the purchase ref took.
func Reinstate(a Account, credits int64, ref string, at time.Time) (Event, error) {
	if credits < 0 || credits > MaxGrant || ref == "" {
		return Event{}, ErrBadAmount
	}
	if a.Balance+credits > MaxBalance {
		return Event{}, ErrBalanceOverflow
	}
	return stamp(a, Event{Type: CreditsReinstated, AccountID: a.ID, Amount: credits, At: at, Ref: ref}), nil
}

// Charge returns the event charging cost for run runNo, or why it may not:
// the balance is below cost, or the account already has maxActive runs.
// The balance is checked first (spec rule 3 comes before rule 8).
func Charge(a Account, runNo, app string, cost int64, maxActive int, at time.Time) (Event, error) {
	if cost < 0 {
		return Event{}, ErrBadAmount
	}
	if a.Balance < cost {
		return Event{}, ErrInsufficientCredits
	}
	if maxActive > 0 && a.Active >= maxActive {
		return Event{}, ErrTooManyActive
	}
	return stamp(a, Event{Type: RunCharged, AccountID: a.ID, Amount: -cost, RunNo: runNo, App: app, At: at}), nil
}

// Settle returns the event ending a completed run: the charge is consumed.
func Settle(a Account, runNo, app string, at time.Time) (Event, error) {
	if a.Active <= 0 {
		return Event{}, ErrNoActiveRun
	}
	return stamp(a, Event{Type: RunSettled, AccountID: a.ID, RunNo: runNo, App: app, At: at}), nil
}

// Refund returns the event ending a failed run: its charge comes back.
func Refund(a Account, runNo, app string, charged int64, at time.Time) (Event, error) {
	if a.Active <= 0 {
		return Event{}, ErrNoActiveRun
	}
	if charged < 0 {
		return Event{}, ErrBadAmount
	}
	return stamp(a, Event{Type: RunRefunded, AccountID: a.ID, Amount: charged, RunNo: runNo, App: app, At: at}), nil
}

// stamp fills the version, the link to a's newest event and the state
// after e.
func stamp(a Account, e Event) Event {
	e.V, e.Prev = Version, a.Head
	after := Apply(a, e)
	e.Balance, e.Active = after.Balance, after.Active
	return e
}

// Snapshot is the state an event says its account is in after it.
func Snapshot(e Event, prev Account) Account {
	a := Apply(prev, e)
	a.Balance, a.Active = e.Balance, e.Active
	return a
}

// Line is one line of an account's statement: a grant, a charge or a
// refund, with the balance after it, and where it is in the log.
type Line struct {
	// Type: opening_grant | grant | adjustment | charge | refund |
	// purchase | revocation | dispute | reinstatement.
	Type   string `json:"type"`
	Amount int64  `json:"amount"`
	RunNo  string `json:"run_no,omitempty"`
	// AppSlug is a charge's or refund's App (none on lines written
	// before the ledger kept it).
	AppSlug string `json:"app_slug,omitempty"`
	// PriceAt is a charge's price in effect: the time of the App's price
	// event it was charged at (none on charges written before the ledger
	// kept it).
	PriceAt time.Time `json:"price_at,omitzero"`
	// Record is a charge's run record head hash (none before records).
	Record  string    `json:"record,omitempty"`
	At      time.Time `json:"at"`
	Balance int64     `json:"balance"`
	// Reference names a purchase's or revocation's payment: the Stripe
	// Checkout Session.
	Reference string `json:"reference,omitempty"`
	// Pack, Paid and Currency are a purchase's pack and what was paid
	// (a revocation's: refunded), in the currency's smallest unit.
	Pack     string `json:"pack,omitempty"`
	Paid     int64  `json:"paid,omitempty"`
	Currency string `json:"currency,omitempty"`
	// PaymentIntent is a purchase's Stripe PaymentIntent.
	PaymentIntent string `json:"payment_intent,omitempty"`
	// Owed is a dispute's debt: what it could not take from the balance.
	Owed int64 `json:"owed,omitempty"`
	// Actor and Reason are the event's (By).
	Actor  string `json:"actor,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Seq is the event's sequence in the log, and Hash the hash of its
	// bytes there (the next event of the account names it as prev).
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

var lineTypes = map[EventType]string{AccountOpened: "opening_grant", CreditsGranted: "grant", CreditsAdjusted: "adjustment",
	RunCharged: "charge", RunRefunded: "refund", CreditsPurchased: "purchase", CreditsRevoked: "revocation",
	CreditsDisputed: "dispute", CreditsReinstated: "reinstatement"}

// LineTypes are the types of statement lines, in the order a statement's
// totals list them.
var LineTypes = []string{"opening_grant", "grant", "adjustment", "purchase", "revocation", "dispute", "reinstatement", "charge", "refund"}

// LineOf is the statement line of an event, the message data at sequence
// seq of the log. Settling a completed run moves no Credits and makes
// none; neither does opening an account with none.
func LineOf(e Event, seq uint64, data []byte) (Line, bool) {
	kind := lineTypes[e.Type]
	if kind == "" || (e.Type == AccountOpened && e.Amount == 0) {
		return Line{}, false
	}
	return Line{Type: kind, Amount: e.Amount, RunNo: e.RunNo, AppSlug: e.App, PriceAt: e.PriceAt, Record: e.Record, At: e.At, Balance: e.Balance, Reference: e.Ref,
		Pack: e.Pack, Paid: e.Paid, Currency: e.Currency, PaymentIntent: e.PaymentIntent, Owed: e.Owed, Actor: e.Actor, Reason: e.Reason, Seq: seq, Hash: Hash(data)}, true
}
