package engine

import (
	"context"
	"errors"
)

// Key is an API key as the read models hold it.
type Key struct {
	KeyID     string `json:"key_id"`
	AccountID string `json:"account_id"`
	Prefix    string `json:"prefix"`
	Revoked   bool   `json:"revoked"`
}

// NewKey is a created API key: shown once, stored only as its hash.
type NewKey struct {
	KeyID  string
	APIKey string
	Seq    uint64
}

func (e *Engine) newKey(accountID string) (string, KeyEvent) {
	key := newID(PrefixAPIKey, 20)
	return key, KeyEvent{Type: KeyCreated, V: eventVersion, At: e.now(), KeyID: newID(PrefixKey, 8),
		AccountID: accountID, Hash: HashKey(key), Prefix: key[:len(PrefixAPIKey)+4]}
}

// CreateKey adds an API key to an existing account.
func (e *Engine) CreateKey(ctx context.Context, accountID string) (NewKey, error) {
	if _, _, err := e.Account(ctx, accountID); err != nil {
		return NewKey{}, err
	}
	key, ev := e.newKey(accountID)
	seq, err := e.log.append(ctx, entry{subject: keySubject(ev.KeyID), value: ev, expect: expectSeq(0)})
	if err != nil {
		return NewKey{}, internal("create key", err)
	}
	return NewKey{KeyID: ev.KeyID, APIKey: key, Seq: seq}, nil
}

// RevokeKey revokes a key for good. Revoking a revoked key is a no-op.
func (e *Engine) RevokeKey(ctx context.Context, keyID string) (uint64, error) {
	if !ValidID(PrefixKey, keyID) {
		return 0, Errorf(CodeKeyNotFound, "no key %q", keyID)
	}
	var last KeyEvent
	seq, err := e.log.last(ctx, keySubject(keyID), &last)
	if errors.Is(err, errNoMessage) {
		return 0, Errorf(CodeKeyNotFound, "no key %q", keyID)
	}
	if err != nil {
		return 0, internal("read key", err)
	}
	if last.Type == KeyRevoked {
		return seq, nil
	}
	ev := last
	ev.Type, ev.At = KeyRevoked, e.now()
	newSeq, err := e.log.append(ctx, entry{subject: keySubject(keyID), value: ev, expect: expectSeq(seq)})
	if errors.Is(err, errConflict) {
		return e.RevokeKey(ctx, keyID) // someone revoked it at the same moment
	}
	if err != nil {
		return 0, internal("revoke key", err)
	}
	return newSeq, nil
}
