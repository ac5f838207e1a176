package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service/store"
	"github.com/apprun/apprun/subjects"
)

// NewAccount is what opening an account returns: the key is shown only here.
type NewAccount struct {
	AccountID string
	KeyID     string
	APIKey    string
	Seq       uint64
}

// OpenAccount opens an account with an initial grant and its first API key,
// in one atomic write.
func (s *Service) OpenAccount(ctx context.Context, email string, credits int64, by ledger.By) (NewAccount, error) {
	email = strings.TrimSpace(email)
	if email == "" || len(email) > 254 || !strings.Contains(email, "@") || !utf8.ValidString(email) {
		return NewAccount{}, engine.Errorf(engine.CodeInvalidInput, "email: must be an email address")
	}
	id := s.id(engine.PrefixAccount, 10)
	if by.Reason != "" && !ledger.ValidReason(by.Reason) {
		return NewAccount{}, badReason()
	}
	ev, err := ledger.Open(id, email, credits, s.now(), by)
	if err != nil {
		return NewAccount{}, engine.Errorf(engine.CodeInvalidInput, "credits: must be between 0 and %d", ledger.MaxGrant)
	}
	key, kev := s.newKey(id, "")
	seq, err := s.appendResolved(ctx,
		store.Entry{Subject: subjects.Account(id), Value: ev, Expect: store.ExpectSeq(0)},
		store.Entry{Subject: subjects.Key(kev.KeyID), Value: kev, Expect: store.ExpectSeq(0)},
		s.keyCountEntry(id, 1, 0),
	)
	if errors.Is(err, errUnresolved) {
		return NewAccount{}, unresolved(fmt.Sprintf("the account %s (%s)", id, email), "a retry may open a second account")
	}
	if err != nil {
		return NewAccount{}, internal("open account", err)
	}
	return NewAccount{AccountID: id, KeyID: kev.KeyID, APIKey: key, Seq: seq}, nil
}

// GrantCredits adds amount Credits to an account and returns the new
// balance. by names who grants, and why: a reason is required.
func (s *Service) GrantCredits(ctx context.Context, id string, amount int64, by ledger.By) (int64, uint64, error) {
	if !ledger.ValidReason(by.Reason) {
		return 0, 0, badReason()
	}
	return s.moveCredits(ctx, id, fmt.Sprintf("the grant of %d Credits to %s", amount, id), func(a ledger.Account) (ledger.Event, error) {
		ev, err := ledger.Grant(a, amount, s.now(), by)
		if err != nil {
			return ev, engine.Errorf(engine.CodeInvalidInput, "amount: must be between 1 and %d, and the balance at most %d", ledger.MaxGrant, ledger.MaxBalance)
		}
		return ev, nil
	})
}

// AdjustCredits corrects an account's balance by amount, in either
// direction but never below zero, and returns the new balance. by names
// who corrects, and why: a reason is required.
func (s *Service) AdjustCredits(ctx context.Context, id string, amount int64, by ledger.By) (int64, uint64, error) {
	if !ledger.ValidReason(by.Reason) {
		return 0, 0, badReason()
	}
	return s.moveCredits(ctx, id, fmt.Sprintf("the adjustment of %d Credits to %s", amount, id), func(a ledger.Account) (ledger.Event, error) {
		ev, err := ledger.Adjust(a, amount, s.now(), by)
		switch {
		case errors.Is(err, ledger.ErrBelowZero):
			return ev, engine.Errorf(engine.CodeInvalidInput, "amount: %d would take the balance of %d below zero", amount, a.Balance)
		case err != nil:
			return ev, engine.Errorf(engine.CodeInvalidInput, "amount: must be between -%d and %d, not 0, and the balance at most %d", ledger.MaxGrant, ledger.MaxGrant, ledger.MaxBalance)
		}
		return ev, nil
	})
}

// moveCredits writes the event next makes of an account's state, with a
// compare-and-set on the account's newest event; what names it in an
// unresolved answer.
func (s *Service) moveCredits(ctx context.Context, id, what string, next func(ledger.Account) (ledger.Event, error)) (int64, uint64, error) {
	for range s.casTries() {
		a, last, err := s.Account(ctx, id)
		if err != nil {
			return 0, 0, err
		}
		ev, err := next(a)
		if err != nil {
			return 0, 0, err
		}
		seq, err := s.appendResolved(ctx, store.Entry{Subject: subjects.Account(id), Value: ev, Expect: store.ExpectSeq(last)})
		if errors.Is(err, port.ErrConflict) {
			continue
		}
		if errors.Is(err, errUnresolved) {
			return 0, 0, unresolved(what, "read its balance before trying again")
		}
		if err != nil {
			return 0, 0, internal("write "+what, err)
		}
		return ev.Balance, seq, nil
	}
	return 0, 0, engine.Errorf(engine.CodeInternal, "account busy; retry")
}

// badReason refuses a missing or malformed reason.
func badReason() error {
	return engine.Errorf(engine.CodeInvalidInput, "reason: required, at most %d bytes of text on one line", ledger.MaxReason)
}

// Account reads an account's state from the log (its newest event).
func (s *Service) Account(ctx context.Context, id string) (ledger.Account, uint64, error) {
	return s.log.Account(ctx, id, false)
}
