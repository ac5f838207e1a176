package service

import (
	"context"
	"errors"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service/store"
	"github.com/apprun/apprun/subjects"
)

// CreateBrandContext records a brand context for an account.
func (s *Service) CreateBrandContext(ctx context.Context, accountID string, bc engine.BrandContext) (engine.BrandContext, uint64, error) {
	bc, err := engine.CheckBrandContext(bc)
	if err != nil {
		return engine.BrandContext{}, 0, err
	}
	bc.ID, bc.AccountID, bc.CreatedAt, bc.UpdatedAt = s.id(engine.PrefixBrand, 10), accountID, s.now(), time.Time{}
	ev := engine.BrandContextEvent{Type: engine.BrandContextCreated, V: engine.EventVersion, At: bc.CreatedAt, BrandContext: bc}
	seq, err := s.appendResolved(ctx, store.Entry{Subject: subjects.Brand(bc.ID), Value: ev, Expect: store.ExpectSeq(0)})
	if errors.Is(err, errUnresolved) {
		return engine.BrandContext{}, 0, unresolved("the brand context "+bc.ID, "a retry may make a second brand context")
	}
	if err != nil {
		return engine.BrandContext{}, 0, internal("create brand context", err)
	}
	return bc, seq, nil
}

// UpdateBrandContext changes the fields edit gives of one of the
// account's brand contexts (the limits of a create hold). Runs made
// before keep the version they were made with.
func (s *Service) UpdateBrandContext(ctx context.Context, accountID, id string, edit engine.BrandEdit) (engine.BrandContext, uint64, error) {
	ev, seq, err := s.changeBrandContext(ctx, accountID, id, &edit)
	return ev.BrandContext, seq, err
}

// DeleteBrandContext ends one of the account's brand contexts: no run can
// name it any more; runs made with it keep their copy.
func (s *Service) DeleteBrandContext(ctx context.Context, accountID, id string) (uint64, error) {
	_, seq, err := s.changeBrandContext(ctx, accountID, id, nil)
	return seq, err
}

// changeBrandContext writes an edit (or, edit nil, a delete) on the brand
// context's subject with a compare-and-set on its newest event: of two
// changes made at once, each is decided from the state the other left.
func (s *Service) changeBrandContext(ctx context.Context, accountID, id string, edit *engine.BrandEdit) (engine.BrandContextEvent, uint64, error) {
	if !engine.ValidID(engine.PrefixBrand, id) {
		return engine.BrandContextEvent{}, 0, engine.Errorf(engine.CodeNotFound, "no brand context %q in this account", id)
	}
	for range s.casTries() {
		var cur engine.BrandContextEvent
		last, err := s.log.Last(ctx, subjects.Brand(id), &cur)
		if errors.Is(err, port.ErrNoMessage) {
			return engine.BrandContextEvent{}, 0, engine.Errorf(engine.CodeNotFound, "no brand context %q in this account", id)
		}
		if err != nil {
			return engine.BrandContextEvent{}, 0, internal("read brand context", err)
		}
		next, err := engine.ChangeBrandContext(cur, accountID, edit, s.now())
		if err != nil {
			return engine.BrandContextEvent{}, 0, err
		}
		seq, err := s.appendResolved(ctx, store.Entry{Subject: subjects.Brand(id), Value: next, Expect: store.ExpectSeq(last)})
		switch {
		case errors.Is(err, port.ErrConflict):
			continue
		case errors.Is(err, errUnresolved):
			return engine.BrandContextEvent{}, 0, unresolved("the change to brand context "+id, "read it before trying again")
		case err != nil:
			return engine.BrandContextEvent{}, 0, internal("write brand context", err)
		}
		return next, seq, nil
	}
	return engine.BrandContextEvent{}, 0, engine.Errorf(engine.CodeInternal, "brand context busy; retry")
}

// brandContextFor resolves the brand context a run names (rule 7).
func (s *Service) brandContextFor(ctx context.Context, app *engine.App, accountID, id string) (*engine.BrandContext, error) {
	if !app.AcceptsBrandContext {
		return nil, engine.Errorf(engine.CodeInvalidBrandContext, "App %q does not accept a brand context", app.Slug)
	}
	if !engine.ValidID(engine.PrefixBrand, id) {
		return nil, engine.Errorf(engine.CodeInvalidBrandContext, "brand_context_id %q is not a brand context id", id)
	}
	bc, err := s.brandContext(ctx, id)
	if errors.Is(err, port.ErrNotFound) || (err == nil && bc.AccountID != accountID) {
		return nil, engine.Errorf(engine.CodeInvalidBrandContext, "no brand context %q in this account", id)
	}
	if err != nil {
		return nil, internal("read brand context", err)
	}
	return &bc, nil
}

// brandContext reads a brand context from the log, not from a read model
// that may not have reached it yet (a new node, a rebuild, a write made a
// moment ago on another node). A deleted one is not found.
func (s *Service) brandContext(ctx context.Context, id string) (engine.BrandContext, error) {
	var ev engine.BrandContextEvent
	_, err := s.log.Last(ctx, subjects.Brand(id), &ev)
	if errors.Is(err, port.ErrNoMessage) || (err == nil && ev.Deleted()) {
		return engine.BrandContext{}, port.ErrNotFound
	}
	if err != nil {
		return engine.BrandContext{}, err
	}
	return ev.BrandContext, nil
}

// brandContextAt is a brand context as it was when the run created at
// sequence createdSeq named it: the run uses that copy even if it was
// edited or deleted while the run waited to start. (Once started, a run
// reads it from its record's start step.)
func (s *Service) brandContextAt(ctx context.Context, id string, createdSeq uint64) (engine.BrandContext, error) {
	var at, first *engine.BrandContextEvent
	err := s.ports.Log.Read(ctx, subjects.Brand(id), 0, func(m port.Message) error {
		var ev engine.BrandContextEvent
		if err := store.DecodeMessage(m, &ev); err != nil {
			return err
		}
		if first == nil {
			first = &ev
		}
		if m.Seq <= createdSeq {
			at = &ev
		}
		return nil
	})
	if err != nil {
		return engine.BrandContext{}, err
	}
	if at == nil {
		at = first // its history before the run is gone: the oldest kept
	}
	if at == nil {
		return engine.BrandContext{}, port.ErrNotFound
	}
	return at.BrandContext, nil
}
