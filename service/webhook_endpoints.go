package service

import (
	"context"
	"errors"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service/store"
	"github.com/apprun/apprun/subjects"
)

// WebhookEndpoint is an account-level webhook receiver (as the store
// reads it).
type WebhookEndpoint = store.WebhookEndpoint

// MaxWebhookEndpoints bounds an account's endpoints.
const MaxWebhookEndpoints = 10

// AddWebhookEndpoint registers a receiver for the account's future runs.
func (s *Service) AddWebhookEndpoint(ctx context.Context, accountID, url string) (WebhookEndpoint, error) {
	if err := s.CheckWebhookURL(url); err != nil {
		return WebhookEndpoint{}, err
	}
	if _, _, err := s.Account(ctx, accountID); err != nil {
		return WebhookEndpoint{}, err
	}
	ep := WebhookEndpoint{ID: s.id("wh_", 10), URL: url, CreatedAt: s.now()}
	return ep, s.updateEndpoints(ctx, accountID, func(list []WebhookEndpoint) ([]WebhookEndpoint, error) {
		if len(list) >= MaxWebhookEndpoints {
			return nil, engine.Errorf(engine.CodeInvalidRequest, "an account has at most %d webhook endpoints", MaxWebhookEndpoints)
		}
		return append(list, ep), nil
	})
}

// RemoveWebhookEndpoint unregisters one; runs made before keep it.
func (s *Service) RemoveWebhookEndpoint(ctx context.Context, accountID, id string) error {
	return s.updateEndpoints(ctx, accountID, func(list []WebhookEndpoint) ([]WebhookEndpoint, error) {
		for i, ep := range list {
			if ep.ID == id {
				return append(list[:i:i], list[i+1:]...), nil
			}
		}
		return nil, engine.Errorf(engine.CodeNotFound, "no webhook endpoint %q", id)
	})
}

func (s *Service) updateEndpoints(ctx context.Context, accountID string, change func([]WebhookEndpoint) ([]WebhookEndpoint, error)) error {
	for range s.casTries() {
		list, seq, err := s.WebhookEndpoints(ctx, accountID)
		if err != nil {
			return err
		}
		next, err := change(append([]WebhookEndpoint(nil), list...))
		if err != nil {
			return err
		}
		_, err = s.appendResolved(ctx, store.Entry{Subject: subjects.WebhookEndpoints(accountID),
			Value: store.EndpointsEvent{Type: "webhook_endpoints", V: engine.EventVersion, At: s.now(), Endpoints: next}, Expect: store.ExpectSeq(seq)})
		if errors.Is(err, port.ErrConflict) {
			continue
		}
		if errors.Is(err, errUnresolved) {
			return unresolved("the change to the webhook endpoints", "list them before trying again")
		}
		if err != nil {
			return internal("write webhook endpoints", err)
		}
		return nil
	}
	return engine.Errorf(engine.CodeInternal, "webhook endpoints busy; retry")
}

// WebhookEndpoints lists an account's endpoints and the sequence they were
// last written at (0: none yet).
func (s *Service) WebhookEndpoints(ctx context.Context, accountID string) ([]WebhookEndpoint, uint64, error) {
	return s.log.WebhookEndpoints(ctx, accountID, false)
}
