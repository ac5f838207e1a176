package web

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"time"

	"github.com/apprun/apprun/service"
	"github.com/nats-io/nats.go/jetstream"
)

// A reset link's token is 32 random bytes, base64url. The bucket holds
// only its SHA-256 (as sessions do), so what the bucket holds cannot be
// used as a link. It is no part of the billing history: a key-value
// bucket whose TTL removes it, and its expiry is checked on every read.

// ResetBucketName is the reset links' bucket.
const ResetBucketName = "APPRUN_RESET_TOKENS"

// ResetTTL is how long a reset link works.
const ResetTTL = 30 * time.Minute

// ResetBucket creates (or opens) the reset links' bucket.
func ResetBucket(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.KeyValue, error) {
	return js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: ResetBucketName, Description: "apprun password reset links", TTL: ResetTTL,
		Storage: jetstream.FileStorage, Replicas: max(replicas, 1),
	})
}

// resetLink is what a token stands for: the login's ticket, until
// ExpiresAt.
type resetLink struct {
	Ticket    service.ResetTicket `json:"ticket"`
	ExpiresAt time.Time           `json:"expires_at"`
}

// resetTokens issues, reads and consumes reset links' tokens.
type resetTokens struct {
	kv  jetstream.KeyValue
	now func() time.Time
}

// errLinkGone is a token that is unknown, expired or used.
var errLinkGone = errors.New("web: the reset link is unknown, expired or used")

// issue stores a new token for t and returns it.
func (rt *resetTokens) issue(ctx context.Context, t service.ResetTicket) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	token := base64.RawURLEncoding.EncodeToString(b)
	data, _ := json.Marshal(resetLink{Ticket: t, ExpiresAt: rt.now().Add(ResetTTL)})
	if _, err := rt.kv.Create(ctx, sessionKey(token), data); err != nil {
		return "", err
	}
	return token, nil
}

// peek reads a token's link and the revision it was read at, without
// consuming it (a mail scanner's prefetch of the link must not use it).
func (rt *resetTokens) peek(ctx context.Context, token string) (resetLink, uint64, error) {
	if len(token) != 43 { // 32 bytes, base64url without padding
		return resetLink{}, 0, errLinkGone
	}
	e, err := rt.kv.Get(ctx, sessionKey(token))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return resetLink{}, 0, errLinkGone
	}
	if err != nil {
		return resetLink{}, 0, err
	}
	var l resetLink
	if err := json.Unmarshal(e.Value(), &l); err != nil || !rt.now().Before(l.ExpiresAt) {
		return resetLink{}, 0, errLinkGone
	}
	return l, e.Revision(), nil
}

// consume removes the token if it is still at the revision peek read (a
// compare-and-set: of concurrent uses of one link, exactly one consumes
// it). A purge: nothing of it stays in the bucket's history.
func (rt *resetTokens) consume(ctx context.Context, token string, rev uint64) error {
	err := rt.kv.Purge(ctx, sessionKey(token), jetstream.LastRevision(rev))
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return errLinkGone
	}
	return err
}
