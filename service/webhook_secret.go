package service

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service/store"
	"github.com/apprun/apprun/subjects"
)

// An account's webhook signing secret is the newest event on its secret
// subject: made on first use, replaced by a rotation. Deliveries read it
// at each attempt, so an attempt after a rotation signs with the new one.

// secretEvent is an account's signing secret, as stored.
type secretEvent struct {
	Type   string    `json:"type"` // "webhook_secret"
	V      int       `json:"v"`
	At     time.Time `json:"at"`
	Secret string    `json:"secret"`
}

func secretSubject(accountID string) string { return subjects.WHSecretPrefix + accountID }

// WebhookSecret returns the account's signing secret, made on first use
// (compare-and-set: every node agrees on one).
func (s *Service) WebhookSecret(ctx context.Context, accountID string) (string, error) {
	if _, _, err := s.Account(ctx, accountID); err != nil {
		return "", err
	}
	return s.secretOf(ctx, accountID)
}

// WebhookSecretMade returns the account's signing secret if it has one
// (made says so), without making one.
func (s *Service) WebhookSecretMade(ctx context.Context, accountID string) (secret string, made bool, err error) {
	var ev secretEvent
	_, err = s.log.Last(ctx, secretSubject(accountID), &ev)
	switch {
	case errors.Is(err, port.ErrNoMessage):
		return "", false, nil
	case err != nil:
		return "", false, internal("read webhook secret", err)
	}
	return ev.Secret, true, nil
}

// RotateWebhookSecret gives the account a new signing secret (its first,
// if it had none) and returns it: every delivery attempt from then on is
// signed with it. It is written with a compare-and-set on the secret it
// replaces, so of two rotations at once each replaces the other's.
func (s *Service) RotateWebhookSecret(ctx context.Context, accountID string) (string, error) {
	if _, _, err := s.Account(ctx, accountID); err != nil {
		return "", err
	}
	for range s.casTries() {
		var cur secretEvent
		seq, err := s.log.Last(ctx, secretSubject(accountID), &cur)
		if err != nil && !errors.Is(err, port.ErrNoMessage) {
			return "", internal("read webhook secret", err)
		}
		ev := s.newSecret()
		_, err = s.appendResolved(ctx, store.Entry{Subject: secretSubject(accountID), Value: ev, Expect: store.ExpectSeq(seq)})
		switch {
		case errors.Is(err, port.ErrConflict):
			continue
		case errors.Is(err, errUnresolved):
			return "", unresolved("the new webhook signing secret", "rotate it again to know it")
		case err != nil:
			return "", internal("store webhook secret", err)
		}
		return ev.Secret, nil
	}
	return "", engine.Errorf(engine.CodeInternal, "webhook secret busy; retry")
}

// newSecret is a new signing secret: 24 random bytes, whsec_ and base64.
func (s *Service) newSecret() secretEvent {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return secretEvent{Type: "webhook_secret", V: engine.EventVersion, At: s.now(), Secret: "whsec_" + base64.StdEncoding.EncodeToString(b)}
}

// secretOf is WebhookSecret for an account known to exist (a delivery's:
// its run exists), without reading the account again.
func (s *Service) secretOf(ctx context.Context, accountID string) (string, error) {
	for range s.casTries() {
		var ev secretEvent
		_, err := s.log.Last(ctx, secretSubject(accountID), &ev)
		if err == nil {
			return ev.Secret, nil
		}
		if !errors.Is(err, port.ErrNoMessage) {
			return "", internal("read webhook secret", err)
		}
		ev = s.newSecret()
		_, err = s.log.Append(ctx, store.Entry{Subject: secretSubject(accountID), Value: ev, Expect: store.ExpectSeq(0)})
		if err == nil {
			return ev.Secret, nil
		}
		if !errors.Is(err, port.ErrConflict) {
			return "", internal("store webhook secret", err)
		}
	}
	return "", engine.Errorf(engine.CodeInternal, "webhook secret busy; retry")
}
