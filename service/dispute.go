package service

import (
	"context"
	"errors"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service/store"
	"github.com/apprun/apprun/subjects"
)

// Disputes: a buyer's bank disputes a payment (a chargeback). The
// Credits the disputed amount stands for are taken back at once, down
// to a zero balance; what the balance could not give is owed, a debt on
// the ledger event the audit sums. A won dispute gives the Credits back
// and clears the debt; a lost one leaves both. Each step is one write
// with the purchase record's compare-and-set, so repeated notices change
// nothing.
//
// A dispute whose notice comes before its purchase's is kept on the
// payment's subject (ErrDisputeHeld), as is its close, and applied in the
// purchase's own write: the purchase's line, then the dispute's
// (earlyDispute).

// ErrDisputeHeld: a dispute notice, or its close, for a payment whose
// purchase has not come yet. It is kept on the payment's subject and
// applied when the purchase's notice comes (GrantPurchase).
var ErrDisputeHeld = errors.New("dispute held until its purchase's notice comes")

// DisputePurchase applies dispute id of amount (in the currency's
// smallest unit) to the purchase of paymentIntent, once, and returns
// the Credits taken and owed. A payment no purchase knows yet is held
// for its purchase (ErrDisputeHeld); one that cannot be a payment
// reference is ErrNoPurchase.
func (s *Service) DisputePurchase(ctx context.Context, paymentIntent, id string, amount int64) (taken, owed int64, err error) {
	if !refPattern.MatchString(paymentIntent) {
		return 0, 0, ErrNoPurchase
	}
	if _, held, err := s.beforePurchase(ctx, paymentIntent, ErrDisputeHeld, func(l *paymentLink) bool {
		if l.Dispute != "" && (l.Dispute != id || l.Disputed != 0) {
			return false // this dispute, or the payment's one, is kept
		}
		l.Dispute, l.Disputed = id, amount
		return true
	}); held || err != nil {
		return 0, 0, err
	}
	err = s.onPurchase(ctx, paymentIntent, func(p *Purchase, a ledger.Account) (*ledger.Event, error) {
		taken, owed = 0, 0
		if p.Dispute != "" {
			return nil, nil // this dispute, or the payment's one, was applied
		}
		ev, err := disputeOf(p, a, id, amount, "payment disputed", s.now())
		if ev != nil {
			taken, owed = -ev.Amount, ev.Owed
		}
		return ev, err
	})
	return taken, owed, err
}

// disputeOf is the event that applies dispute id of amount to purchase
// p, on account a, and records it on p: the Credits the disputed share
// of the payment stands for, less what refunds took, taken down to a zero
// balance and the rest owed.
func disputeOf(p *Purchase, a ledger.Account, id string, amount int64, reason string, at time.Time) (*ledger.Event, error) {
	covered := owedFor(p.Credits, p.Paid, min(amount, p.Paid))
	covered = min(covered, p.Credits-p.Revoked) // what refunds took is not taken twice
	ev, err := ledger.Dispute(a, max(covered, 0), p.Ref, amount, p.Currency, at)
	if err != nil {
		return nil, engine.Errorf(engine.CodeInvalidInput, "dispute of %d Credits: %v", covered, err)
	}
	ev.Actor, ev.Reason = "stripe:"+id, reason
	p.Dispute, p.Disputed, p.DisputeTaken, p.DisputeOwed = id, amount, -ev.Amount, ev.Owed
	return &ev, nil
}

// earlyDispute applies to purchase p, about to be granted (a: its account
// after the grant), the dispute its payment's subject kept (early): the
// dispute's event to write after the grant's, nil when there is none or
// it was won before the purchase came (nothing to take).
func earlyDispute(p *Purchase, early paymentLink, a ledger.Account) (*ledger.Event, error) {
	if early.Dispute == "" {
		return nil, nil
	}
	if early.DisputeEnd == "won" || early.Disputed == 0 {
		// Won, or closed before its opening's notice said how much: nothing
		// to take.
		p.Dispute, p.Disputed, p.DisputeEnd = early.Dispute, early.Disputed, early.DisputeEnd
		return nil, nil
	}
	ev, err := disputeOf(p, a, early.Dispute, early.Disputed, "payment disputed before its purchase's notice came", p.At)
	p.DisputeEnd = early.DisputeEnd
	return ev, err
}

// CloseDispute closes dispute id (of amount) of paymentIntent's purchase:
// won gives back the Credits it took and clears its debt; lost keeps
// both. A close whose opening's notice has not come stands for it: lost
// takes what the opening would have; won takes nothing, and the opening,
// when it comes, changes nothing. It returns the Credits given back.
func (s *Service) CloseDispute(ctx context.Context, paymentIntent, id string, amount int64, won bool) (reinstated int64, err error) {
	if !refPattern.MatchString(paymentIntent) {
		return 0, ErrNoPurchase
	}
	if _, held, err := s.beforePurchase(ctx, paymentIntent, ErrDisputeHeld, func(l *paymentLink) bool {
		if l.Dispute != "" && l.Dispute != id || l.DisputeEnd != "" {
			return false // not this payment's dispute, or closed already
		}
		l.Dispute, l.DisputeEnd = id, "lost"
		if l.Disputed == 0 {
			l.Disputed = amount // its opening's notice has not come
		}
		if won {
			l.DisputeEnd = "won"
		}
		return true
	}); held || err != nil {
		return 0, err
	}
	err = s.onPurchase(ctx, paymentIntent, func(p *Purchase, a ledger.Account) (*ledger.Event, error) {
		if p.Dispute == "" { // the close came before its opening: it stands for both
			if won {
				p.Dispute, p.Disputed, p.DisputeEnd = id, amount, "won"
				return nil, nil
			}
			ev, err := disputeOf(p, a, id, amount, "payment disputed and lost (the close came before the opening)", s.now())
			p.DisputeEnd = "lost"
			return ev, err
		}
		if p.Dispute != id || p.DisputeEnd != "" {
			return nil, nil // not this payment's dispute, or closed already
		}
		if !won {
			p.DisputeEnd = "lost"
			return nil, nil
		}
		ev, err := ledger.Reinstate(a, p.DisputeTaken, p.Ref, s.now())
		if err != nil {
			return nil, engine.Errorf(engine.CodeInvalidInput, "reinstate %d Credits: %v", p.DisputeTaken, err)
		}
		ev.Actor, ev.Reason = "stripe:"+id, "dispute won"
		p.DisputeEnd, reinstated = "won", p.DisputeTaken
		return &ev, nil
	})
	return reinstated, err
}

// onPurchase reads paymentIntent's purchase and its account, lets change
// update the record and make an account event (nil: none), and writes
// both in one compare-and-set write; an unchanged record writes nothing.
func (s *Service) onPurchase(ctx context.Context, paymentIntent string, change func(*Purchase, ledger.Account) (*ledger.Event, error)) error {
	if !refPattern.MatchString(paymentIntent) {
		return ErrNoPurchase
	}
	var link paymentLink
	if _, err := s.log.Last(ctx, subjects.PaymentPIPrefix+paymentIntent, &link); errors.Is(err, port.ErrNoMessage) || err == nil && link.Ref == "" {
		return ErrNoPurchase
	} else if err != nil {
		return internal("read payment", err)
	}
	for range s.casTries() {
		var p Purchase
		pseq, err := s.log.Last(ctx, subjects.PurchasePrefix+link.Ref, &p)
		if err != nil {
			return internal("read purchase", err)
		}
		a, last, err := s.Account(ctx, p.AccountID)
		if err != nil {
			return err
		}
		before := p
		ev, err := change(&p, a)
		if err != nil || p == before {
			return err
		}
		entries := []store.Entry{{Subject: subjects.PurchasePrefix + link.Ref, Value: p, Expect: store.ExpectSeq(pseq)}}
		if ev != nil {
			entries = append(entries, store.Entry{Subject: subjects.Account(p.AccountID), Value: *ev, Expect: store.ExpectSeq(last)})
		}
		_, err = s.log.Append(ctx, entries...)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, port.ErrConflict) || store.IsAmbiguous(err):
			continue
		default:
			return internal("write purchase", err)
		}
	}
	return engine.Errorf(engine.CodeInternal, "account busy; retry")
}
