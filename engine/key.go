package engine

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apprun/apprun/subjects"
)

// Key is an API key as the read models hold it.
type Key struct {
	KeyID      string    `json:"key_id"`
	AccountID  string    `json:"account_id"`
	Prefix     string    `json:"prefix"`
	Name       string    `json:"name,omitempty"`
	Revoked    bool      `json:"revoked"`
	CreatedAt  time.Time `json:"created_at"`
	LastUsedAt time.Time `json:"last_used_at"`
	RevokedAt  time.Time `json:"revoked_at"`
}

// MaxKeyName is the longest name a key may have.
const MaxKeyName = 100

// NewKey is a created API key: shown once, stored only as its hash.
type NewKey struct {
	KeyID  string
	APIKey string
	Seq    uint64
}

func (e *Engine) newKey(accountID, name string) (string, KeyEvent) {
	key := e.id(PrefixAPIKey, 20)
	return key, KeyEvent{Type: KeyCreated, V: EventVersion, At: e.now(), KeyID: e.id(PrefixKey, 8),
		AccountID: accountID, Hash: HashKey(key), Prefix: key[:len(PrefixAPIKey)+4], Name: name}
}

// MaxActiveKeys is how many active API keys an account may hold. The
// limits of a key (creates and reads a minute, open streams) would
// otherwise multiply with keys.
const MaxActiveKeys = 10

// keyCount is the newest message on an account's key-count subject: how
// many of its keys are active. Every key creation and revocation moves it
// with a compare-and-set, in the same atomic write, so the cap holds on
// every node at once. (Accounts opened before the count existed start
// counting at their next key.)
type keyCount struct {
	Type   string    `json:"type"` // "key_count"
	V      int       `json:"v"`
	Active int       `json:"active"`
	At     time.Time `json:"at"`
}

// activeKeys reads an account's count and its sequence (0: none yet).
func (e *Engine) activeKeys(ctx context.Context, accountID string) (int, uint64, error) {
	var c keyCount
	seq, err := e.log.last(ctx, subjects.KeyCount(accountID), &c)
	if errors.Is(err, ErrNoMessage) {
		return 0, 0, nil
	}
	return c.Active, seq, err
}

func (e *Engine) keyCountEntry(accountID string, active int, seq uint64) entry {
	return entry{subject: subjects.KeyCount(accountID), expect: expectSeq(seq),
		value: keyCount{Type: "key_count", V: EventVersion, Active: active, At: e.now()}}
}

// CreateKey adds an API key, with an optional name, to an existing account
// that has fewer than MaxActiveKeys active keys.
func (e *Engine) CreateKey(ctx context.Context, accountID, name string) (NewKey, error) {
	name = strings.TrimSpace(name)
	if !utf8.ValidString(name) || utf8.RuneCountInString(name) > MaxKeyName || strings.ContainsAny(name, "\r\n") {
		return NewKey{}, Errorf(CodeInvalidInput, "name: at most %d characters of UTF-8 text on one line", MaxKeyName)
	}
	if _, _, err := e.Account(ctx, accountID); err != nil {
		return NewKey{}, err
	}
	for range e.casTries() {
		active, countSeq, err := e.activeKeys(ctx, accountID)
		if err != nil {
			return NewKey{}, internal("read key count", err)
		}
		if active >= MaxActiveKeys {
			return NewKey{}, Errorf(CodeInvalidRequest, "this account already has %d active API keys, the most it may hold; revoke one first", MaxActiveKeys)
		}
		key, ev := e.newKey(accountID, name)
		seq, err := e.appendResolved(ctx, entry{subject: subjects.Key(ev.KeyID), value: ev, expect: expectSeq(0)},
			e.keyCountEntry(accountID, active+1, countSeq))
		if errors.Is(err, ErrConflict) {
			continue // another key was made or revoked meanwhile
		}
		if errors.Is(err, errUnresolved) {
			return NewKey{}, unresolved("the key "+ev.KeyID, "a retry may make a second key")
		}
		if err != nil {
			return NewKey{}, internal("create key", err)
		}
		return NewKey{KeyID: ev.KeyID, APIKey: key, Seq: seq}, nil
	}
	return NewKey{}, Errorf(CodeInternal, "too much contention on this account's keys; retry")
}

// RevokeKey revokes a key for good. Revoking a revoked key is a no-op.
func (e *Engine) RevokeKey(ctx context.Context, keyID string) (uint64, error) {
	if !ValidID(PrefixKey, keyID) {
		return 0, Errorf(CodeKeyNotFound, "no key %q", keyID)
	}
	var last KeyEvent
	seq, err := e.log.last(ctx, subjects.Key(keyID), &last)
	if errors.Is(err, ErrNoMessage) {
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
	entries := []entry{{subject: subjects.Key(keyID), value: ev, expect: expectSeq(seq)}}
	active, countSeq, err := e.activeKeys(ctx, last.AccountID)
	if err != nil {
		return 0, internal("read key count", err)
	}
	if active > 0 { // counted (an account older than the count has none)
		entries = append(entries, e.keyCountEntry(last.AccountID, active-1, countSeq))
	}
	newSeq, err := e.log.append(ctx, entries...)
	if errors.Is(err, ErrConflict) {
		return e.RevokeKey(ctx, keyID) // someone revoked it, or the count moved, at the same moment
	}
	if err != nil {
		return 0, internal("revoke key", err)
	}
	return newSeq, nil
}

// KeyUseEvery is how often a key's use is recorded in the log, on all
// nodes together: a key's last-used time is kept to the minute.
const KeyUseEvery = time.Minute

// TouchKey records that a key was used now, unless it is revoked or its
// use was recorded less than KeyUseEvery ago (by any node). The record is
// the only message on the key's use subject (a rollup), so key use never
// grows the log. Callers bound how often they ask (httpapi: once a minute
// a key and node).
//
// The record is lazy and checks nothing: it rides in the next admissions'
// batch instead of costing a synced write of its own (4,096 keys used
// for the first time in 10 s made 809–1,304 creates/s against
// 1,350–1,464 without the records; BENCHMARKS.md, eleventh pass), and a
// check could only fail the admissions beside it. Two nodes recording one
// key at the same moment both write; the rollup keeps one, a few
// milliseconds apart from the other. A use recorded just after a
// revocation changes nothing: the read model keeps a revoked key revoked.
func (e *Engine) TouchKey(ctx context.Context, keyID string) error {
	var key KeyEvent
	if _, err := e.log.last(ctx, subjects.Key(keyID), &key); errors.Is(err, ErrNoMessage) || (err == nil && key.Type == KeyRevoked) {
		return nil
	} else if err != nil {
		return internal("read key", err)
	}
	var last KeyEvent
	if _, err := e.log.last(ctx, subjects.KeyUse(keyID), &last); err != nil && !errors.Is(err, ErrNoMessage) {
		return internal("read key use", err)
	} else if err == nil && e.now().Sub(last.At) < KeyUseEvery {
		return nil // recorded a moment ago, here or on another node
	}
	ev := key
	ev.Type, ev.At = KeyUsed, e.now()
	if _, err := e.log.append(ctx, entry{subject: subjects.KeyUse(keyID), value: ev, rollup: true, lazy: true}); err != nil {
		return internal("touch key", err)
	}
	return nil
}

// SessionKeyID is what a website session's requests count against in
// place of an API key (rate limits, open streams): one per account, never
// a real key.
func SessionKeyID(accountID string) string { return "web_" + accountID }
