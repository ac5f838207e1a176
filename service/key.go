package service

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service/store"
	"github.com/apprun/apprun/subjects"
)

func (s *Service) newKey(accountID, name string) (string, engine.KeyEvent) {
	key := s.id(engine.PrefixAPIKey, 20)
	return key, engine.KeyEvent{Type: engine.KeyCreated, V: engine.EventVersion, At: s.now(), KeyID: s.id(engine.PrefixKey, 8),
		AccountID: accountID, Hash: engine.HashKey(key), Prefix: key[:len(engine.PrefixAPIKey)+4], Name: name}
}

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
func (s *Service) activeKeys(ctx context.Context, accountID string) (int, uint64, error) {
	var c keyCount
	seq, err := s.log.Last(ctx, subjects.KeyCount(accountID), &c)
	if errors.Is(err, port.ErrNoMessage) {
		return 0, 0, nil
	}
	return c.Active, seq, err
}

func (s *Service) keyCountEntry(accountID string, active int, seq uint64) store.Entry {
	return store.Entry{Subject: subjects.KeyCount(accountID), Expect: store.ExpectSeq(seq),
		Value: keyCount{Type: "key_count", V: engine.EventVersion, Active: active, At: s.now()}}
}

// CreateKey adds an API key, with an optional name, to an existing account
// that has fewer than MaxActiveKeys active keys.
func (s *Service) CreateKey(ctx context.Context, accountID, name string) (NewKey, error) {
	name = strings.TrimSpace(name)
	if !utf8.ValidString(name) || utf8.RuneCountInString(name) > engine.MaxKeyName || strings.ContainsAny(name, "\r\n") {
		return NewKey{}, engine.Errorf(engine.CodeInvalidInput, "name: at most %d characters of UTF-8 text on one line", engine.MaxKeyName)
	}
	if _, _, err := s.Account(ctx, accountID); err != nil {
		return NewKey{}, err
	}
	for range s.casTries() {
		active, countSeq, err := s.activeKeys(ctx, accountID)
		if err != nil {
			return NewKey{}, internal("read key count", err)
		}
		if active >= engine.MaxActiveKeys {
			return NewKey{}, engine.Errorf(engine.CodeInvalidRequest, "this account already has %d active API keys, the most it may hold; revoke one first", engine.MaxActiveKeys)
		}
		key, ev := s.newKey(accountID, name)
		seq, err := s.appendResolved(ctx, store.Entry{Subject: subjects.Key(ev.KeyID), Value: ev, Expect: store.ExpectSeq(0)},
			s.keyCountEntry(accountID, active+1, countSeq))
		if errors.Is(err, port.ErrConflict) {
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
	return NewKey{}, engine.Errorf(engine.CodeInternal, "too much contention on this account's keys; retry")
}

// RevokeKey revokes a key for good. Revoking a revoked key is a no-op.
func (s *Service) RevokeKey(ctx context.Context, keyID string) (uint64, error) {
	if !engine.ValidID(engine.PrefixKey, keyID) {
		return 0, engine.Errorf(engine.CodeKeyNotFound, "no key %q", keyID)
	}
	var last engine.KeyEvent
	seq, head, err := s.log.LastHead(ctx, subjects.Key(keyID), &last)
	if errors.Is(err, port.ErrNoMessage) {
		return 0, engine.Errorf(engine.CodeKeyNotFound, "no key %q", keyID)
	}
	if err != nil {
		return 0, internal("read key", err)
	}
	if last.Type == engine.KeyRevoked {
		return seq, nil
	}
	ev := last
	ev.Type, ev.At, ev.Prev, ev.Sig = engine.KeyRevoked, s.now(), head, ""
	entries := []store.Entry{{Subject: subjects.Key(keyID), Value: ev, Expect: store.ExpectSeq(seq)}}
	active, countSeq, err := s.activeKeys(ctx, last.AccountID)
	if err != nil {
		return 0, internal("read key count", err)
	}
	if active > 0 { // counted (an account older than the count has none)
		entries = append(entries, s.keyCountEntry(last.AccountID, active-1, countSeq))
	}
	newSeq, err := s.log.Append(ctx, entries...)
	if errors.Is(err, port.ErrConflict) {
		return s.RevokeKey(ctx, keyID) // someone revoked it, or the count moved, at the same moment
	}
	if err != nil {
		return 0, internal("revoke key", err)
	}
	return newSeq, nil
}

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
func (s *Service) TouchKey(ctx context.Context, keyID string) error {
	var key engine.KeyEvent
	if _, err := s.log.Last(ctx, subjects.Key(keyID), &key); errors.Is(err, port.ErrNoMessage) || (err == nil && key.Type == engine.KeyRevoked) {
		return nil
	} else if err != nil {
		return internal("read key", err)
	}
	var last engine.KeyEvent
	if _, err := s.log.Last(ctx, subjects.KeyUse(keyID), &last); err != nil && !errors.Is(err, port.ErrNoMessage) {
		return internal("read key use", err)
	} else if err == nil && s.now().Sub(last.At) < KeyUseEvery {
		return nil // recorded a moment ago, here or on another node
	}
	ev := key
	ev.Type, ev.At = engine.KeyUsed, s.now()
	if _, err := s.log.Append(ctx, store.Entry{Subject: subjects.KeyUse(keyID), Value: ev, Rollup: true, Lazy: true}); err != nil {
		return internal("touch key", err)
	}
	return nil
}

// NewKey is a created API key: shown once, stored only as its hash.
type NewKey struct {
	KeyID  string
	APIKey string
	Seq    uint64
}

// KeyUseEvery is how often a key's use is recorded in the log, on all
// nodes together: a key's last-used time is kept to the minute.
const KeyUseEvery = time.Minute

// SessionKeyID is what a website session's requests count against in
// place of an API key (rate limits, open streams): one per account, never
// a real key.
func SessionKeyID(accountID string) string { return "web_" + accountID }
