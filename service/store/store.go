// Package store is the service's typed view of the Log port: entries in
// domain terms encoded into one atomic append, the newest message of a
// subject decoded, the state a use case decides from (an account, a
// price, an account's webhook endpoints), a run's log read in order, and
// the cache that lets an admission read accounts, prices and slots
// without a read of the log (lastCache says why that is exact). What to do when a write is
// refused or its answer is lost (the compare-and-set tries, resolve,
// fence) is the service's: the store says only what the log answered.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/subjects"
)

// Entry is one message of a write in domain terms: a value to encode.
type Entry struct {
	Subject string
	Value   any
	// Expect, when not nil, is the sequence the last message on subject
	// (or on expectSubject, when set) must have; 0 means "no message yet".
	Expect        *uint64
	ExpectSubject string
	TTL           time.Duration
	Rollup        bool
	Lazy          bool
}

func ExpectSeq(seq uint64) *uint64 { return &seq }

// Store is the service's typed view of the Log port: it encodes and decodes
// the domain's events and counts what it appended.
type Store struct {
	log      port.Log
	appended atomic.Uint64
	// cache: the newest message of the subjects admissions read
	// (lastCache).
	cache lastCache
	// signer signs every account event written (nil: none are).
	signer *ledger.Signer
}

// New is a Store on log, signing the account events it writes with signer
// (nil: unsigned).
func New(log port.Log, signer *ledger.Signer) *Store { return &Store{log: log, signer: signer} }

// Appended is how many messages this store has appended.
func (s *Store) Appended() uint64 { return s.appended.Load() }

// Observe takes m, a message of the log as this node's read models
// applied it, as the newest of its subject unless a newer one is known.
func (s *Store) Observe(m port.Message) {
	if cacheable(m.Subject) {
		s.cache.put(m)
	}
}

// ReplaceCached makes m the cached newest message of its subject, newer
// or not: a test's stale cache.
func (s *Store) ReplaceCached(m port.Message) {
	s.cache.drop(m.Subject)
	s.cache.put(m)
}

// Append encodes entries and writes them atomically; it returns the
// sequence of the last one.
func (s *Store) Append(ctx context.Context, entries ...Entry) (uint64, error) {
	out, err := s.Encode(entries)
	if err != nil {
		return 0, err
	}
	return s.AppendEncoded(ctx, out)
}

// AppendEncoded is append of entries already encoded.
func (s *Store) AppendEncoded(ctx context.Context, out []port.Entry) (uint64, error) {
	seq, err := s.log.Append(ctx, out...)
	if err == nil {
		s.appended.Add(uint64(len(out)))
	}
	for i, e := range out {
		switch {
		case !cacheable(e.Subject):
		case err != nil:
			s.cache.drop(e.Subject)
		default: // the entries precede the last contiguously (the Log port)
			s.cache.put(port.Message{Subject: e.Subject, Seq: seq - uint64(len(out)-1-i), Data: e.Data})
		}
	}
	return seq, err
}

// Encode turns typed entries into the Log port's, each account event and
// checkpoint signed with the store's key.
func (s *Store) Encode(entries []Entry) ([]port.Entry, error) {
	return encode(entries, s.signer)
}

// Encode turns typed entries that hold no account event into the Log
// port's (account events are encoded by a Store, which signs them).
func Encode(entries []Entry) ([]port.Entry, error) {
	for _, e := range entries {
		switch e.Value.(type) {
		case ledger.Event, ledger.Checkpoint, ledger.Record:
			return nil, fmt.Errorf("encode %s: an account event, checkpoint, price or key is encoded by a Store, which signs it", e.Subject)
		}
	}
	return encode(entries, nil)
}

func encode(entries []Entry, signer *ledger.Signer) ([]port.Entry, error) {
	out := make([]port.Entry, len(entries))
	// An account event after another of its account in the batch names
	// that one's bytes as prev: they are stored one after the other.
	var prev map[string][]byte
	var lastRecord, lastSigned any // the batch's last record signed, and as signed
	for i, e := range entries {
		var err error
		switch v := e.Value.(type) {
		case ledger.Event:
			if data, ok := prev[e.Subject]; ok {
				v.Prev = ledger.Hash(data)
			}
			e.Value = v
			if signer != nil {
				e.Value, err = signer.Sign(v)
			}
		case ledger.Record:
			if signer != nil {
				// A price's copies are the price itself: one signature
				// serves all of them (Ed25519 is deterministic).
				if same, ok := lastRecord.(ledger.Record); ok && same == v {
					e.Value = lastSigned
				} else if e.Value, err = signer.SignRecord(v); err == nil {
					lastRecord, lastSigned = v, e.Value
				}
			}
		case ledger.Checkpoint:
			if signer == nil {
				return nil, fmt.Errorf("sign %s: no signing key", e.Subject)
			}
			e.Value, err = signer.SignCheckpoint(v)
		}
		if err != nil {
			return nil, fmt.Errorf("sign %s: %w", e.Subject, err)
		}
		data, err := json.Marshal(e.Value)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", e.Subject, err)
		}
		out[i] = port.Entry{Subject: e.Subject, Data: data, Expect: e.Expect, ExpectSubject: e.ExpectSubject, TTL: e.TTL, Rollup: e.Rollup, Lazy: e.Lazy}
		if _, ok := e.Value.(ledger.Event); ok {
			if prev == nil {
				prev = map[string][]byte{}
			}
			prev[e.Subject] = data
		}
	}
	return out, nil
}

// Last decodes the newest message on subject into v and returns its sequence.
func (s *Store) Last(ctx context.Context, subject string, v any) (uint64, error) {
	m, err := s.last(ctx, subject)
	if err != nil {
		return 0, err
	}
	return m.Seq, DecodeMessage(m, v)
}

// LastHead is Last, and the hash of the message as stored: the prev of
// the next signed record on subject (ledger.Record).
func (s *Store) LastHead(ctx context.Context, subject string, v any) (seq uint64, head string, err error) {
	m, err := s.last(ctx, subject)
	if err != nil {
		return 0, "", err
	}
	return m.Seq, ledger.Hash(m.Data), DecodeMessage(m, v)
}

// last is the newest message on subject, from the log, kept in the cache.
func (s *Store) last(ctx context.Context, subject string) (port.Message, error) {
	m, err := s.log.Last(ctx, subject)
	m.Subject = subject
	if cacheable(subject) {
		switch {
		case err == nil:
			s.cache.put(m)
		case errors.Is(err, port.ErrNoMessage):
			s.cache.put(port.Message{Subject: subject})
		}
	}
	return m, err
}

// LastFrom is Last, answered from the cache when cached is set and the
// cache holds the subject (hit; lastCache says when that is exact).
func (s *Store) LastFrom(ctx context.Context, cached bool, subject string, v any) (seq uint64, hit bool, err error) {
	m, hit, err := s.lastMessage(ctx, cached, subject)
	if err != nil {
		return 0, hit, err
	}
	return m.Seq, hit, DecodeMessage(m, v)
}

// lastMessage is the newest message on subject, from the cache when
// cached is set and the cache holds it (hit).
func (s *Store) lastMessage(ctx context.Context, cached bool, subject string) (m port.Message, hit bool, err error) {
	m, ok := s.cache.get(subject)
	if !cached || !ok {
		m, err := s.last(ctx, subject)
		return m, false, err
	}
	if m.Seq == 0 {
		return port.Message{}, true, port.ErrNoMessage
	}
	return m, true, nil
}

func DecodeMessage(m port.Message, v any) error {
	if err := json.Unmarshal(m.Data, v); err != nil {
		return fmt.Errorf("decode %s@%d: %w", m.Subject, m.Seq, err)
	}
	return nil
}

// The state a use case decides from: an account's balance, an App's
// price, an account's webhook endpoints. Each is the newest event on its
// subject, read from the log, or from the cache when cached is set and
// the write that follows checks its sequence (lastCache).

// Account reads an account's state and the sequence it is at.
func (s *Store) Account(ctx context.Context, id string, cached bool) (ledger.Account, uint64, error) {
	if !engine.ValidID(engine.PrefixAccount, id) {
		return ledger.Account{}, 0, engine.Errorf(engine.CodeAccountNotFound, "no account %q", id)
	}
	var ev ledger.Event
	m, _, err := s.lastMessage(ctx, cached, subjects.Account(id))
	if err == nil {
		err = DecodeMessage(m, &ev)
	}
	if errors.Is(err, port.ErrNoMessage) {
		return ledger.Account{}, 0, engine.Errorf(engine.CodeAccountNotFound, "no account %q", id)
	}
	if err != nil {
		return ledger.Account{}, 0, fmt.Errorf("store: read account: %w", err)
	}
	return ledger.Account{ID: id, Balance: ev.Balance, Active: ev.Active, Head: ledger.Hash(m.Data)}, m.Seq, nil
}

// CheckedPrice is a price as an admission read it: Seq is of the subject
// Check, a copy's, when Check is set (the service's price.go says why
// prices have copies).
type CheckedPrice struct {
	engine.Price
	Check string
}

// CheckSubject is the subject whose sequence Seq is: what an admission's
// write checks.
func (p CheckedPrice) CheckSubject() string {
	if p.Check != "" {
		return p.Check
	}
	return subjects.Price(p.Slug)
}

// Price reads an App's price from its own subject; hit says it came
// from the cache.
func (s *Store) Price(ctx context.Context, slug string, cached bool) (p CheckedPrice, hit bool, err error) {
	return s.priceFrom(ctx, slug, "", cached)
}

// AdmissionPrice is Price as an admission reads it: from copy, or from
// the price itself when the log holds no copy of it, or a price newer
// than the copy (written without copies, by a node from before them:
// every copy is written after its price).
func (s *Store) AdmissionPrice(ctx context.Context, slug string, copy int, cached bool) (p CheckedPrice, hit bool, err error) {
	p, hit, err = s.priceFrom(ctx, slug, subjects.PriceCopy(slug, copy), cached)
	if err != nil {
		return CheckedPrice{}, false, err
	}
	own, ownHit, err := s.priceFrom(ctx, slug, "", cached)
	if err != nil {
		return CheckedPrice{}, false, err
	}
	if p.Seq == 0 || own.Seq > p.Seq {
		return own, ownHit, nil
	}
	return p, hit, nil
}

// priceFrom reads slug's price from the copy check ("": the price's own
// subject).
func (s *Store) priceFrom(ctx context.Context, slug, check string, cached bool) (p CheckedPrice, hit bool, err error) {
	subject := check
	if subject == "" {
		subject = subjects.Price(slug)
	}
	var ev engine.PriceEvent
	seq, hit, err := s.LastFrom(ctx, cached, subject, &ev)
	if errors.Is(err, port.ErrNoMessage) {
		return CheckedPrice{Price: engine.Price{Slug: slug}}, hit, nil
	}
	if err != nil {
		return CheckedPrice{}, false, fmt.Errorf("store: read price: %w", err)
	}
	return CheckedPrice{engine.Price{Slug: slug, CreditCost: ev.CreditCost, Recalibrating: ev.Recalibrating, Seq: seq, At: ev.At}, check}, hit, nil
}

// WebhookEndpoints reads an account's endpoints and the sequence they
// were last written at (0: none yet). The cache is exact for them only on
// a standalone node, where every write is its own (lastCache): the caller
// says cached only there.
func (s *Store) WebhookEndpoints(ctx context.Context, accountID string, cached bool) ([]WebhookEndpoint, uint64, error) {
	var ev EndpointsEvent
	seq, _, err := s.LastFrom(ctx, cached, subjects.WebhookEndpoints(accountID), &ev)
	if errors.Is(err, port.ErrNoMessage) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("store: read webhook endpoints: %w", err)
	}
	return ev.Endpoints, seq, nil
}

// WebhookEndpoint is an account-level webhook receiver: every run the
// account creates while it is registered delivers its terminal event there.
type WebhookEndpoint struct {
	ID        string    `json:"endpoint_id"`
	URL       string    `json:"url"`
	CreatedAt time.Time `json:"created_at"`
}

// EndpointsEvent is an account's webhook endpoints, whole, as last
// written on its subject.
type EndpointsEvent struct {
	Type      string            `json:"type"` // "webhook_endpoints"
	V         int               `json:"v"`
	At        time.Time         `json:"at"`
	Endpoints []WebhookEndpoint `json:"endpoints"`
}

// LoggedEvent is a run event with its stream sequence, the SSE id.
type LoggedEvent struct {
	Seq   uint64
	Event engine.RunEvent
}

// RunLog reads the events of a run after seq `after`, in order.
func (s *Store) RunLog(ctx context.Context, runNo string, after uint64) ([]LoggedEvent, error) {
	var out []LoggedEvent
	err := s.EachRunEvent(ctx, runNo, after, func(le LoggedEvent) error {
		out = append(out, le)
		return nil
	})
	return out, err
}

// EachRunEvent calls fn with each event of a run after seq `after`, in
// order, decoding each as it arrives.
func (s *Store) EachRunEvent(ctx context.Context, runNo string, after uint64, fn func(LoggedEvent) error) error {
	subj := subjects.Run(runNo)
	return s.log.Read(ctx, subj, after, func(m port.Message) error {
		e, err := engine.DecodeRunEvent(m.Data)
		if err != nil {
			return fmt.Errorf("decode %s@%d: %w", subj, m.Seq, err)
		}
		return fn(LoggedEvent{Seq: m.Seq, Event: e})
	})
}

// IsAmbiguous reports whether err leaves a write's outcome unknown.
func IsAmbiguous(err error) bool { return errors.Is(err, port.ErrAmbiguous) }

// lastCache keeps the newest message of the subjects an admission reads
// (accounts, prices, platform slots, webhook endpoints) as this node last
// wrote or read them, so an admission needs no read from the log.
//
// Why it is exact:
//   - A cached account, price or slot only feeds a compare-and-set: the
//     admission's write expects the sequence it read, so a message this
//     node has not seen (another node's write) makes the write fail,
//     nothing stored, and the retry reads the log.
//   - A refusal (402, 409, 429 concurrency) is never made from the cache:
//     it is confirmed by a read of the log first.
//   - Webhook endpoints are no compare-and-set; their cache is used only on
//     a standalone node, where every write to the log is this node's and
//     passes through here.
//
// Every write updates it (store.append): the subjects of a stored append
// take its sequences, those of a failed or unanswered one are dropped.
type lastCache struct {
	mu sync.Mutex
	m  map[string]port.Message // Seq 0: no message on the subject
}

// maxCached bounds the cache; it is emptied when full (a miss is a read).
const maxCached = 1 << 17

// cacheable reports whether subject is one the cache keeps.
func cacheable(subject string) bool {
	return strings.HasPrefix(subject, subjects.AccountPrefix) || strings.HasPrefix(subject, subjects.PricePrefix) ||
		strings.HasPrefix(subject, subjects.PriceCopyPrefix) ||
		strings.HasPrefix(subject, subjects.SlotPrefix) || strings.HasPrefix(subject, subjects.WHEndpointsPrefix)
}

func (c *lastCache) get(subject string) (port.Message, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.m[subject]
	return m, ok
}

// put keeps m unless a newer message of its subject is known.
func (c *lastCache) put(m port.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[m.Subject]; ok && old.Seq > m.Seq {
		return
	}
	if c.m == nil || len(c.m) >= maxCached {
		c.m = make(map[string]port.Message)
	}
	c.m[m.Subject] = m
}

func (c *lastCache) drop(subject string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, subject)
}
