package service

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service/store"
	"github.com/apprun/apprun/subjects"
)

// brand context field limits, in characters.
var brandFieldMax = map[string]int{"name": 120, "description": 4000, "voice": 1000, "audience": 1000, "website": 500}

// CreateBrandContext records a brand context for an account.
func (s *Service) CreateBrandContext(ctx context.Context, accountID string, bc engine.BrandContext) (engine.BrandContext, uint64, error) {
	bc.Name = strings.TrimSpace(bc.Name)
	if bc.Name == "" {
		return engine.BrandContext{}, 0, engine.Errorf(engine.CodeInvalidInput, "name: is required")
	}
	for field, v := range map[string]string{"name": bc.Name, "description": bc.Description, "voice": bc.Voice, "audience": bc.Audience, "website": bc.Website} {
		if n := utf8.RuneCountInString(v); n > brandFieldMax[field] {
			return engine.BrandContext{}, 0, engine.Errorf(engine.CodeInvalidInput, "%s: at most %d characters (got %d)", field, brandFieldMax[field], n)
		}
	}
	bc.ID, bc.AccountID, bc.CreatedAt = s.id(engine.PrefixBrand, 10), accountID, s.now()
	ev := engine.BrandContextEvent{Type: "brand_context_created", V: engine.EventVersion, At: bc.CreatedAt, BrandContext: bc}
	seq, err := s.appendResolved(ctx, store.Entry{Subject: subjects.Brand(bc.ID), Value: ev, Expect: store.ExpectSeq(0)})
	if errors.Is(err, errUnresolved) {
		return engine.BrandContext{}, 0, unresolved("the brand context "+bc.ID, "a retry may make a second brand context")
	}
	if err != nil {
		return engine.BrandContext{}, 0, internal("create brand context", err)
	}
	return bc, seq, nil
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
// moment ago on another node).
func (s *Service) brandContext(ctx context.Context, id string) (engine.BrandContext, error) {
	var ev engine.BrandContextEvent
	_, err := s.log.Last(ctx, subjects.Brand(id), &ev)
	if errors.Is(err, port.ErrNoMessage) {
		return engine.BrandContext{}, port.ErrNotFound
	}
	if err != nil {
		return engine.BrandContext{}, err
	}
	return ev.BrandContext, nil
}
