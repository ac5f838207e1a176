package service

import (
	"context"
	"errors"

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

// DisputePurchase applies dispute id of amount (in the currency's
// smallest unit) to the purchase of paymentIntent, once, and returns
// the Credits taken and owed. A payment no purchase knows is
// ErrNoPurchase.
func (s *Service) DisputePurchase(ctx context.Context, paymentIntent, id string, amount int64) (taken, owed int64, err error) {
	err = s.onPurchase(ctx, paymentIntent, func(p *Purchase, a ledger.Account) (*ledger.Event, error) {
		taken, owed = 0, 0
		if p.Dispute != "" {
			return nil, nil // this dispute, or the payment's one, was applied
		}
		covered := owedFor(p.Credits, p.Paid, min(amount, p.Paid))
		covered = min(covered, p.Credits-p.Revoked) // what refunds took is not taken twice
		ev, err := ledger.Dispute(a, max(covered, 0), p.Ref, amount, p.Currency, s.now())
		if err != nil {
			return nil, engine.Errorf(engine.CodeInvalidInput, "dispute of %d Credits: %v", covered, err)
		}
		ev.Actor, ev.Reason = "stripe:"+id, "payment disputed"
		p.Dispute, p.Disputed, p.DisputeTaken, p.DisputeOwed = id, amount, -ev.Amount, ev.Owed
		taken, owed = -ev.Amount, ev.Owed
		return &ev, nil
	})
	return taken, owed, err
}

// CloseDispute closes dispute id of paymentIntent's purchase: won gives
// back the Credits it took and clears its debt; lost keeps both. It
// returns the Credits given back.
func (s *Service) CloseDispute(ctx context.Context, paymentIntent, id string, won bool) (reinstated int64, err error) {
	err = s.onPurchase(ctx, paymentIntent, func(p *Purchase, a ledger.Account) (*ledger.Event, error) {
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
