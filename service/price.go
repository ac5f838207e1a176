package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service/store"
	"github.com/apprun/apprun/subjects"
)

// Copies of a price.
//
// On a replicated stream JetStream refuses a compare-and-set on a subject
// while another checked write on it is being replicated (nats-server's
// expectedPerSubjectInProcess, server/jetstream_batching.go), and every
// admission checks its App's price. A cluster's nodes therefore admitted
// one batch at a time between them: the others' batches were refused and
// written again (BENCHMARKS.md, issue 21, seventh pass).
//
// So every price is written with priceCopies copies of it, in one atomic
// batch, and a node's admissions check the copy it picked at random when
// it was made (priceCopy): the nodes of a cluster check different subjects
// and their admissions are replicated side by side. Two nodes of three
// pick the same copy about once in 11 starts, and then admitted one batch
// at a time again (a cluster's creates fell by 40 %, BENCHMARKS.md, ninth
// pass): an admission refused while neither its account nor its price
// moved moves its service to another copy (movePriceCopyFrom; a refusal by
// a platform slot taken meanwhile moves it too, which costs a read).
//
// A copy is the price's own event, and a price is never written without
// its copies, so checking a copy is checking the price. An App whose
// copies the log does not hold (a log written before copies) is checked on
// its price, the copies being written when a node starts (seedPrices).
const priceCopies = 32

// priceWrites is the one atomic write of a price and its copies: the
// price's own message first (expect, when not nil, is its check).
func priceWrites(ev engine.PriceEvent, expect *uint64) []store.Entry {
	return append([]store.Entry{{Subject: subjects.Price(ev.Slug), Value: ev, Expect: expect}}, copyWrites(ev, nil)...)
}

// copyWrites are the copies of the price ev, each replacing the copy
// before it; expect, when not nil, is the sequence the price itself must
// still have.
func copyWrites(ev engine.PriceEvent, expect *uint64) []store.Entry {
	out := make([]store.Entry, priceCopies)
	for i := range out {
		out[i] = store.Entry{Subject: subjects.PriceCopy(ev.Slug, i), Value: ev, Rollup: true, Expect: expect}
		if expect != nil {
			out[i].ExpectSubject = subjects.Price(ev.Slug)
		}
	}
	return out
}

// movePriceCopyFrom makes this node's admissions check another copy of
// slug's price than check, when check is the copy they check now (a
// refusal the log does not explain is another node's check on the same
// subject being replicated), and says whether it did.
func (s *Service) movePriceCopyFrom(slug, check string) bool {
	from := int(s.priceCopy.Load())
	if check != subjects.PriceCopy(slug, from) {
		return false // the price itself, or a copy already left
	}
	to := s.cfg.IntN(priceCopies - 1)
	if to >= from {
		to++
	}
	return s.priceCopy.CompareAndSwap(int32(from), int32(to)) // once, however many admissions saw it
}

// SetPrice sets an App's price, or marks it recalibrating (runs of it answer
// pricing_not_ready until a price is set).
// by names who sets it, and why: a reason is required.
func (s *Service) SetPrice(ctx context.Context, slug string, cost int64, recalibrating bool, by ledger.By) (engine.Price, uint64, error) {
	if _, ok := s.cfg.Catalog.Get(slug); !ok {
		return engine.Price{}, 0, engine.Errorf(engine.CodeAppNotFound, "no App with slug %q", slug)
	}
	if !ledger.ValidReason(by.Reason) {
		return engine.Price{}, 0, badReason()
	}
	if !recalibrating && (cost < 0 || cost > engine.MaxPrice) {
		return engine.Price{}, 0, engine.Errorf(engine.CodeInvalidInput, "credit_cost: must be between 0 and %d", engine.MaxPrice)
	}
	if recalibrating {
		cost = 0
	}
	ev := engine.PriceEvent{Type: "price_set", V: engine.EventVersion, At: s.now(), Slug: slug, CreditCost: cost, Recalibrating: recalibrating,
		Actor: by.Actor, Reason: by.Reason}
	for range s.casTries() {
		// The price names the one before it (its chain, ledger.Record),
		// checked by the write's compare-and-set.
		var before engine.PriceEvent
		seq, head, err := s.log.LastHead(ctx, subjects.Price(slug), &before)
		if errors.Is(err, port.ErrNoMessage) {
			seq, head, err = 0, "", nil
		}
		if err != nil {
			return engine.Price{}, 0, internal("read price", err)
		}
		ev.Prev = head
		last, err := s.log.Append(ctx, priceWrites(ev, store.ExpectSeq(seq))...)
		switch {
		case err == nil:
			return engine.Price{Slug: slug, CreditCost: cost, Recalibrating: recalibrating, Seq: last - priceCopies, At: ev.At}, last, nil
		case errors.Is(err, port.ErrConflict):
			continue // another price came meanwhile: read again
		default:
			return engine.Price{}, 0, internal("set price", err)
		}
	}
	return engine.Price{}, 0, engine.Errorf(engine.CodeInternal, "price busy; retry")
}

// seedPrices writes each App's initial price, with its copies, when its
// subject is empty (the compare-and-set on an empty subject lets many nodes
// start at once), and the copies of a price written before copies were.
// A node that starts on its own log only reads. The Apps are seeded side
// by side, so that their writes share atomic batches (eventlog's group
// commit): one after another, a fresh node's 63 took 0.3 s.
func (s *Service) seedPrices(ctx context.Context) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, a := range s.cfg.Catalog.All() {
		if a.Price <= 0 {
			continue
		}
		wg.Go(func() {
			if err := port.Retry(ctx, s.cfg.Logger, "seed prices", func(ctx context.Context) error { return s.seedPrice(ctx, a) }); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// seedPrice is seedPrices for one App. When another node prices it first
// (its check fails), the price is read again and copied if need be: that
// race is how nodes that start together meet, not a wait.
func (s *Service) seedPrice(ctx context.Context, a *engine.App) error {
	for range 3 {
		var ev engine.PriceEvent
		seq, err := s.log.Last(ctx, subjects.Price(a.Slug), &ev)
		if errors.Is(err, port.ErrNoMessage) {
			ev = engine.PriceEvent{Type: "price_set", V: engine.EventVersion, At: s.now(), Slug: a.Slug, CreditCost: a.Price,
				Actor: "system:seed", Reason: "the App definition's price"}
			_, err = s.log.Append(ctx, priceWrites(ev, store.ExpectSeq(0))...)
			if errors.Is(err, port.ErrConflict) {
				continue
			}
			return err
		}
		if err != nil {
			return err
		}
		return s.copyPrice(ctx, ev, seq)
	}
	return errSeededElsewhere
}

// errSeededElsewhere: another node's first price for an App failed this
// node's check, and the log still showed no price when read again.
var errSeededElsewhere = errors.New("service: another node priced this App, and its price cannot be read yet")

// copyPrice writes the copies of the price ev (at seq) when the log holds
// none (it was written before copies were), each checking that the price
// is still ev. A price changed meanwhile was written with its copies.
func (s *Service) copyPrice(ctx context.Context, ev engine.PriceEvent, seq uint64) error {
	var copied engine.PriceEvent
	if _, err := s.log.Last(ctx, subjects.PriceCopy(ev.Slug, int(s.priceCopy.Load())), &copied); !errors.Is(err, port.ErrNoMessage) {
		return err // copied (nil), or unreadable
	}
	if _, err := s.log.Append(ctx, copyWrites(ev, store.ExpectSeq(seq))...); err != nil && !errors.Is(err, port.ErrConflict) {
		return err
	}
	return nil
}

// CurrentPrice reads an App's price from the log.
func (s *Service) CurrentPrice(ctx context.Context, slug string) (engine.Price, error) {
	p, _, err := s.log.Price(ctx, slug, false)
	return p.Price, err
}

// PricePoint is one price an App had: from At, set by Actor for Reason,
// at sequence Seq of the log.
type PricePoint struct {
	Seq           uint64    `json:"seq"`
	At            time.Time `json:"at"`
	CreditCost    int64     `json:"credit_cost"`
	Recalibrating bool      `json:"recalibrating"`
	Actor         string    `json:"actor,omitempty"`
	Reason        string    `json:"reason,omitempty"`
}

// PriceHistory lists every price an App had, oldest first, as the log
// holds them.
func (s *Service) PriceHistory(ctx context.Context, slug string) ([]PricePoint, error) {
	if _, ok := s.cfg.Catalog.Get(slug); !ok {
		return nil, engine.Errorf(engine.CodeAppNotFound, "no App with slug %q", slug)
	}
	var out []PricePoint
	err := s.ports.Log.Read(ctx, subjects.Price(slug), 0, func(m port.Message) error {
		var ev engine.PriceEvent
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			return fmt.Errorf("price at %d: %w", m.Seq, err)
		}
		out = append(out, PricePoint{Seq: m.Seq, At: ev.At, CreditCost: ev.CreditCost, Recalibrating: ev.Recalibrating, Actor: ev.Actor, Reason: ev.Reason})
		return nil
	})
	if err != nil {
		return nil, internal("read price history", err)
	}
	return out, nil
}
