package engine

import (
	"context"
	"errors"
)

// Price is an App's current price as the log says it.
type Price struct {
	Slug          string `json:"slug"`
	CreditCost    int64  `json:"credit_cost"`
	Recalibrating bool   `json:"recalibrating"`
	// Seq is the sequence of the price event (0: none yet).
	Seq uint64 `json:"-"`
}

// Ready reports whether a run can be priced now.
func (p Price) Ready() bool { return p.Seq != 0 && !p.Recalibrating }

// MaxPrice bounds a price in Credits.
const MaxPrice = 1_000_000

// CurrentPrice reads an App's price from the log.
func (e *Engine) CurrentPrice(ctx context.Context, slug string) (Price, error) {
	p, _, err := e.price(ctx, slug, false)
	return p, err
}

// price is CurrentPrice, answered from the cache when cached is set and the
// cache holds it (hit), for an admission, whose write checks the price's
// sequence (lastcache.go).
func (e *Engine) price(ctx context.Context, slug string, cached bool) (p Price, hit bool, err error) {
	var ev PriceEvent
	seq, hit, err := e.log.lastFrom(ctx, cached, priceSubject(slug), &ev)
	if errors.Is(err, ErrNoMessage) {
		return Price{Slug: slug}, hit, nil
	}
	if err != nil {
		return Price{}, false, internal("read price", err)
	}
	return Price{Slug: slug, CreditCost: ev.CreditCost, Recalibrating: ev.Recalibrating, Seq: seq}, hit, nil
}

// SetPrice sets an App's price, or marks it recalibrating (runs of it answer
// pricing_not_ready until a price is set).
func (e *Engine) SetPrice(ctx context.Context, slug string, cost int64, recalibrating bool) (Price, uint64, error) {
	if _, ok := e.cfg.Catalog.apps[slug]; !ok {
		return Price{}, 0, Errorf(CodeAppNotFound, "no App with slug %q", slug)
	}
	if !recalibrating && (cost < 0 || cost > MaxPrice) {
		return Price{}, 0, Errorf(CodeInvalidInput, "credit_cost: must be between 0 and %d", MaxPrice)
	}
	if recalibrating {
		cost = 0
	}
	ev := PriceEvent{Type: "price_set", V: eventVersion, At: e.now(), Slug: slug, CreditCost: cost, Recalibrating: recalibrating}
	seq, err := e.log.append(ctx, entry{subject: priceSubject(slug), value: ev})
	if err != nil {
		return Price{}, 0, internal("set price", err)
	}
	return Price{Slug: slug, CreditCost: cost, Recalibrating: recalibrating, Seq: seq}, seq, nil
}

// seedPrices writes each App's initial price when its subject is empty. The
// compare-and-set on an empty subject lets many nodes start at once.
func (e *Engine) seedPrices(ctx context.Context) error {
	for _, a := range e.cfg.Catalog.all() {
		if a.Price <= 0 {
			continue
		}
		ev := PriceEvent{Type: "price_set", V: eventVersion, At: e.now(), Slug: a.Slug, CreditCost: a.Price}
		err := Retry(ctx, e.cfg.Logger, "seed prices", func(ctx context.Context) error {
			_, err := e.log.append(ctx, entry{subject: priceSubject(a.Slug), value: ev, expect: expectSeq(0)})
			if errors.Is(err, ErrConflict) {
				return nil // priced already, by this node earlier or another one
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}
