package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service/store"
	"github.com/apprun/apprun/subjects"
)

// Purchases: Credits bought through a payment provider (Stripe Checkout).
// A payment is granted exactly once: the grant and the purchase record
// are one atomic write whose purchase subject must be empty, so a
// redelivered or concurrent notice finds it taken and grants nothing. A
// refund revokes the refunded share of the Credits: the revocation and
// the updated record are one write expecting the record's last sequence.

// Purchase is the record of one paid payment, on its purchase subject.
type Purchase struct {
	AccountID string `json:"account_id"`
	// Ref is the provider's payment reference (a Checkout Session id).
	Ref      string `json:"ref"`
	Pack     string `json:"pack"`
	Credits  int64  `json:"credits"`
	Paid     int64  `json:"paid"`
	Currency string `json:"currency"`
	// PaymentIntent links the provider's refund notices to the purchase.
	PaymentIntent string    `json:"payment_intent,omitempty"`
	At            time.Time `json:"at"`
	// Refunded is how much of Paid was refunded so far, and Revoked how
	// many Credits that took back.
	Refunded int64 `json:"refunded,omitempty"`
	Revoked  int64 `json:"revoked,omitempty"`
	// A dispute of the payment (Stripe allows one a charge): its id, the
	// amount disputed, the Credits it took and owes, and how it closed
	// ("won", "lost"; "" while open).
	Dispute      string `json:"dispute,omitempty"`
	Disputed     int64  `json:"disputed,omitempty"`
	DisputeTaken int64  `json:"dispute_taken,omitempty"`
	DisputeOwed  int64  `json:"dispute_owed,omitempty"`
	DisputeEnd   string `json:"dispute_end,omitempty"`
}

// Unmatched is a paid notice apprun could not grant (an unknown account
// or pack): kept for an operator to settle by hand.
type Unmatched struct {
	EventID string    `json:"event_id"`
	Ref     string    `json:"ref"`
	Reason  string    `json:"reason"`
	Detail  string    `json:"detail"`
	At      time.Time `json:"at"`
}

// refPattern is what a payment reference may be: it becomes a subject
// token, so no dots, wildcards or spaces.
var refPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,200}$`)

// paymentLink is a payment intent's subject: its purchase's reference,
// or, before the purchase's notice came, no reference and what Stripe
// said of the payment meanwhile (a refund or dispute notice can arrive
// first): refunded so far, and its dispute, its amount and its end.
type paymentLink struct {
	Ref        string `json:"ref,omitempty"`
	Refunded   int64  `json:"refunded,omitempty"`
	Dispute    string `json:"dispute,omitempty"`
	Disputed   int64  `json:"disputed,omitempty"`
	DisputeEnd string `json:"dispute_end,omitempty"`
}

// owedFor is how many of credits a refund of refunded out of paid takes
// back: its share, rounded up; all of them when all was refunded.
func owedFor(credits, paid, refunded int64) int64 {
	if paid <= 0 || refunded >= paid {
		return credits
	}
	return (credits*refunded + paid - 1) / paid
}

// GrantPurchase grants a paid purchase's Credits once. It reports whether
// this call granted them (false: an earlier notice did).
func (s *Service) GrantPurchase(ctx context.Context, p Purchase) (bool, error) {
	if !refPattern.MatchString(p.Ref) || (p.PaymentIntent != "" && !refPattern.MatchString(p.PaymentIntent)) {
		return false, engine.Errorf(engine.CodeInvalidInput, "payment reference %q: not a reference", p.Ref)
	}
	p.At = s.now()
	for range s.casTries() {
		if granted, err := s.purchaseExists(ctx, p.Ref); err != nil || granted {
			return false, err
		}
		a, last, err := s.Account(ctx, p.AccountID)
		if err != nil {
			return false, err
		}
		// A refund whose notice came first is taken off now: the net is
		// granted, and the record says what was refunded and revoked. A
		// dispute whose notice came first is applied after the grant, in
		// the same write (earlyDispute).
		early, linkSeq, err := s.earlyNotices(ctx, p.PaymentIntent)
		if err != nil {
			return false, err
		}
		if early.Ref != "" {
			continue // a purchase has the payment: this one, granted meanwhile, is seen above
		}
		p.Refunded, p.Revoked = min(early.Refunded, p.Paid), 0
		p.Dispute, p.Disputed, p.DisputeTaken, p.DisputeOwed, p.DisputeEnd = "", 0, 0, 0, ""
		if p.Refunded > 0 {
			p.Revoked = owedFor(p.Credits, p.Paid, p.Refunded)
		}
		ev, err := ledger.Purchase(a, p.Credits-p.Revoked, p.Ref, p.Pack, p.Paid, p.Currency, p.At)
		ev.Actor, ev.PaymentIntent = "stripe:"+p.Ref, p.PaymentIntent
		if p.Refunded > 0 {
			ev.Reason = fmt.Sprintf("%d of the %d %s paid was refunded before the payment's notice came: %d of the pack's %d Credits withheld",
				p.Refunded, p.Paid, p.Currency, p.Revoked, p.Credits)
		}
		if err != nil {
			return false, engine.Errorf(engine.CodeInvalidInput, "purchase of %d Credits: %v", p.Credits, err)
		}
		entries := []store.Entry{{Subject: subjects.Account(p.AccountID), Value: ev, Expect: store.ExpectSeq(last)}}
		if dispute, err := earlyDispute(&p, early, ledger.Apply(a, ev)); err != nil {
			return false, err
		} else if dispute != nil {
			entries = append(entries, store.Entry{Subject: subjects.Account(p.AccountID), Value: *dispute})
		}
		entries = append(entries, store.Entry{Subject: subjects.PurchasePrefix + p.Ref, Value: p, Expect: store.ExpectSeq(0)})
		if p.PaymentIntent != "" {
			entries = append(entries, store.Entry{Subject: subjects.PaymentPIPrefix + p.PaymentIntent, Value: paymentLink{Ref: p.Ref}, Expect: store.ExpectSeq(linkSeq)})
		}
		_, err = s.log.Append(ctx, entries...)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, port.ErrConflict) || store.IsAmbiguous(err):
			continue // the account moved, or another notice won: look again
		default:
			return false, internal("grant purchase", err)
		}
	}
	return false, engine.Errorf(engine.CodeInternal, "account busy; retry")
}

// Purchased reports whether a payment with this reference (a Checkout
// Session id) has been granted: exact on every node, from the log. A
// reference that could not be one was never granted.
func (s *Service) Purchased(ctx context.Context, ref string) (bool, error) {
	if !refPattern.MatchString(ref) {
		return false, nil
	}
	return s.purchaseExists(ctx, ref)
}

func (s *Service) purchaseExists(ctx context.Context, ref string) (bool, error) {
	_, err := s.ports.Log.Last(ctx, subjects.PurchasePrefix+ref)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, port.ErrNoMessage):
		return false, nil
	default:
		return false, internal("read purchase", err)
	}
}

// RevokeRefunded takes back the share of a purchase's Credits that its
// refunds (refunded: the payment's total refunded so far) stand for,
// rounded up, never more than the purchase. Repeating a notice revokes
// nothing more. It returns the Credits this call revoked. A payment no
// purchase knows yet is held for its purchase (ErrRefundHeld); one that
// cannot be a payment reference is ErrNoPurchase.
func (s *Service) RevokeRefunded(ctx context.Context, paymentIntent string, refunded int64) (int64, error) {
	if !refPattern.MatchString(paymentIntent) {
		return 0, ErrNoPurchase
	}
	link, held, err := s.beforePurchase(ctx, paymentIntent, ErrRefundHeld, func(l *paymentLink) bool {
		if refunded <= l.Refunded {
			return false
		}
		l.Refunded = refunded
		return true
	})
	if held || err != nil {
		return 0, err
	}
	for range s.casTries() {
		var p Purchase
		pseq, err := s.log.Last(ctx, subjects.PurchasePrefix+link.Ref, &p)
		if err != nil {
			return 0, internal("read purchase", err)
		}
		if refunded > p.Paid {
			refunded = p.Paid
		}
		if refunded <= p.Refunded {
			return 0, nil // this refund, or a larger one, was taken already
		}
		take := owedFor(p.Credits, p.Paid, refunded) - p.Revoked
		var covered int64 // of take, what the payment's dispute took (or owes) already
		if p.Dispute != "" && p.DisputeEnd != "won" {
			// Not taken twice: the overlap moves from the dispute to the
			// refund, so that a won dispute gives back only what no refund
			// covers (the debt first, then the Credits taken).
			covered = min(max(take, 0), p.DisputeTaken+p.DisputeOwed)
			fromOwed := min(covered, p.DisputeOwed)
			p.DisputeOwed, p.DisputeTaken = p.DisputeOwed-fromOwed, p.DisputeTaken-(covered-fromOwed)
			take -= covered
		}
		a, last, err := s.Account(ctx, p.AccountID)
		if err != nil {
			return 0, err
		}
		refundDelta := refunded - p.Refunded
		p.Refunded, p.Revoked = refunded, p.Revoked+max(take, 0)+covered
		entries := []store.Entry{{Subject: subjects.PurchasePrefix + link.Ref, Value: p, Expect: store.ExpectSeq(pseq)}}
		if take > 0 {
			ev, err := ledger.Revoke(a, take, link.Ref, refundDelta, p.Currency, s.now())
			ev.Actor = "stripe:" + paymentIntent
			if err != nil {
				return 0, engine.Errorf(engine.CodeInvalidInput, "revoke %d Credits: %v", take, err)
			}
			entries = append(entries, store.Entry{Subject: subjects.Account(p.AccountID), Value: ev, Expect: store.ExpectSeq(last)})
		}
		_, err = s.log.Append(ctx, entries...)
		switch {
		case err == nil:
			return max(take, 0), nil
		case errors.Is(err, port.ErrConflict) || store.IsAmbiguous(err):
			continue
		default:
			return 0, internal("revoke purchase", err)
		}
	}
	return 0, engine.Errorf(engine.CodeInternal, "account busy; retry")
}

// ErrNoPurchase: a refund notice for a payment apprun never granted.
var ErrNoPurchase = errors.New("no purchase for this payment")

// ErrRefundHeld: a refund notice for a payment whose purchase has not
// come yet. What it refunded is kept on the payment's subject, and
// taken off the purchase when its notice comes (GrantPurchase).
var ErrRefundHeld = errors.New("refund held until its purchase's notice comes")

// beforePurchase reads paymentIntent's subject. When a purchase has the
// payment, it returns the link (held false). When none has it yet, what
// the notice says is kept there for the purchase: change updates the link
// and says whether it changed anything, and the write is a
// compare-and-set, so a repeated notice changes nothing. held is then
// true, and err heldErr once it is kept.
func (s *Service) beforePurchase(ctx context.Context, paymentIntent string, heldErr error, change func(*paymentLink) bool) (link paymentLink, held bool, err error) {
	subject := subjects.PaymentPIPrefix + paymentIntent
	for range s.casTries() {
		link = paymentLink{}
		seq, err := s.log.Last(ctx, subject, &link)
		switch {
		case err != nil && !errors.Is(err, port.ErrNoMessage):
			return link, true, internal("read payment", err)
		case link.Ref != "":
			return link, false, nil
		case !change(&link):
			return link, true, heldErr
		}
		_, err = s.log.Append(ctx, store.Entry{Subject: subject, Value: link, Expect: store.ExpectSeq(seq)})
		switch {
		case err == nil:
			return link, true, heldErr
		case errors.Is(err, port.ErrConflict) || store.IsAmbiguous(err):
			continue // another notice, or the purchase, came meanwhile: read again
		default:
			return link, true, internal("hold on payment", err)
		}
	}
	return link, true, engine.Errorf(engine.CodeInternal, "payment busy; retry")
}

// earlyNotices is what a payment's notices that came before its
// purchase's kept (beforePurchase), and the sequence its subject's link
// must expect; a link with a Ref says a purchase has the payment already.
// No payment intent: nothing.
func (s *Service) earlyNotices(ctx context.Context, paymentIntent string) (link paymentLink, seq uint64, err error) {
	if paymentIntent == "" {
		return link, 0, nil
	}
	seq, err = s.log.Last(ctx, subjects.PaymentPIPrefix+paymentIntent, &link)
	switch {
	case errors.Is(err, port.ErrNoMessage):
		return paymentLink{}, 0, nil
	case err != nil:
		return link, 0, internal("read payment", err)
	}
	return link, seq, nil
}

// PurchaseOf reads a purchase's record.
func (s *Service) PurchaseOf(ctx context.Context, ref string) (Purchase, bool, error) {
	if !refPattern.MatchString(ref) {
		return Purchase{}, false, nil
	}
	var p Purchase
	_, err := s.log.Last(ctx, subjects.PurchasePrefix+ref, &p)
	if errors.Is(err, port.ErrNoMessage) {
		return Purchase{}, false, nil
	}
	if err != nil {
		return Purchase{}, false, internal("read purchase", err)
	}
	return p, true, nil
}

// RecordUnmatched keeps a paid notice that could not be granted, once per
// provider event.
func (s *Service) RecordUnmatched(ctx context.Context, u Unmatched) error {
	if !refPattern.MatchString(u.EventID) {
		return engine.Errorf(engine.CodeInvalidInput, "event id %q: not an id", u.EventID)
	}
	u.At = s.now()
	_, err := s.log.Append(ctx, store.Entry{Subject: subjects.UnmatchedPrefix + u.EventID, Value: u, Expect: store.ExpectSeq(0)})
	if err != nil && !errors.Is(err, port.ErrConflict) {
		return internal("record unmatched payment", err)
	}
	return nil
}

// UnmatchedPayments lists the paid notices no account could be granted.
func (s *Service) UnmatchedPayments(ctx context.Context) ([]Unmatched, error) {
	var out []Unmatched
	err := s.ports.Log.Read(ctx, subjects.UnmatchedPrefix+"*", 0, func(m port.Message) error {
		var u Unmatched
		if err := json.Unmarshal(m.Data, &u); err != nil {
			return err
		}
		out = append(out, u)
		return nil
	})
	if err != nil && !errors.Is(err, port.ErrNoMessage) {
		return nil, internal("read unmatched payments", err)
	}
	return out, nil
}
