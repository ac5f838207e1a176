package service

import (
	"context"
	"errors"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/subjects"
)

// The state a use case decides from: an account's balance, an App's price
// (as an admission checks it: from this node's copy, price.go), an
// account's webhook endpoints. Each is the newest event on its subject,
// read from the log, or from the store's cache when the write that
// follows checks its sequence (the store's lastCache).

// Account reads an account's state from the log (its newest event).
func (s *Service) Account(ctx context.Context, id string) (ledger.Account, uint64, error) {
	return s.account(ctx, id, false)
}

// account is Account, answered from the cache when cached is set (for a
// compare-and-set write only: the store's lastCache).
func (s *Service) account(ctx context.Context, id string, cached bool) (ledger.Account, uint64, error) {
	if !engine.ValidID(engine.PrefixAccount, id) {
		return ledger.Account{}, 0, engine.Errorf(engine.CodeAccountNotFound, "no account %q", id)
	}
	var ev ledger.Event
	seq, _, err := s.log.LastFrom(ctx, cached, subjects.Account(id), &ev)
	if errors.Is(err, port.ErrNoMessage) {
		return ledger.Account{}, 0, engine.Errorf(engine.CodeAccountNotFound, "no account %q", id)
	}
	if err != nil {
		return ledger.Account{}, 0, internal("read account", err)
	}
	return ledger.Account{ID: id, Balance: ev.Balance, Active: ev.Active}, seq, nil
}

// CurrentPrice reads an App's price from the log.
func (s *Service) CurrentPrice(ctx context.Context, slug string) (engine.Price, error) {
	p, _, err := s.price(ctx, slug, false)
	return p.Price, err
}

// price is CurrentPrice, answered from the cache when cached is set and the
// cache holds it (hit), for an admission, whose write checks the price's
// sequence (the store's lastCache).
func (s *Service) price(ctx context.Context, slug string, cached bool) (p checkedPrice, hit bool, err error) {
	return s.priceFrom(ctx, slug, "", cached)
}

// admissionPrice is price as an admission reads it: from this node's
// copy, or from the price itself when the log holds no copy of it, or a
// price newer than the copy (written without copies, by a node from before
// them: every copy is written after its price).
func (s *Service) admissionPrice(ctx context.Context, slug string, cached bool) (p checkedPrice, hit bool, err error) {
	p, hit, err = s.priceFrom(ctx, slug, subjects.PriceCopy(slug, int(s.priceCopy.Load())), cached)
	if err != nil {
		return checkedPrice{}, false, err
	}
	own, ownHit, err := s.priceFrom(ctx, slug, "", cached)
	if err != nil {
		return checkedPrice{}, false, err
	}
	if p.Seq == 0 || own.Seq > p.Seq {
		return own, ownHit, nil
	}
	return p, hit, nil
}

// priceFrom reads slug's price from the copy check ("": the price's own
// subject).
func (s *Service) priceFrom(ctx context.Context, slug, check string, cached bool) (p checkedPrice, hit bool, err error) {
	subject := check
	if subject == "" {
		subject = subjects.Price(slug)
	}
	var ev engine.PriceEvent
	seq, hit, err := s.log.LastFrom(ctx, cached, subject, &ev)
	if errors.Is(err, port.ErrNoMessage) {
		return checkedPrice{Price: engine.Price{Slug: slug}}, hit, nil
	}
	if err != nil {
		return checkedPrice{}, false, internal("read price", err)
	}
	return checkedPrice{engine.Price{Slug: slug, CreditCost: ev.CreditCost, Recalibrating: ev.Recalibrating, Seq: seq}, check}, hit, nil
}

// checkedPrice is a price as an admission read it: Seq is of the subject
// check, when that is a copy's.
type checkedPrice struct {
	engine.Price
	// check is the subject Seq is of, when it is a copy's.
	check string
}

// checkSubject is the subject whose sequence Seq is: what an admission's
// write checks.
func (p checkedPrice) checkSubject() string {
	if p.check != "" {
		return p.check
	}
	return subjects.Price(p.Slug)
}

// WebhookEndpoints lists an account's endpoints and the sequence they were
// last written at (0: none yet).
func (s *Service) WebhookEndpoints(ctx context.Context, accountID string) ([]WebhookEndpoint, uint64, error) {
	return s.webhookEndpoints(ctx, accountID, false)
}

// webhookEndpoints is WebhookEndpoints, answered from the cache when
// cached is set and this node is standalone (every write is its own, so
// the cache is the log's state: the store's lastCache).
func (s *Service) webhookEndpoints(ctx context.Context, accountID string, cached bool) ([]WebhookEndpoint, uint64, error) {
	var ev endpointsEvent
	seq, _, err := s.log.LastFrom(ctx, cached && s.cfg.Standalone, subjects.WebhookEndpoints(accountID), &ev)
	if errors.Is(err, port.ErrNoMessage) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, internal("read webhook endpoints", err)
	}
	return ev.Endpoints, seq, nil
}
