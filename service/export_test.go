package service

import (
	"context"
	crand "crypto/rand"
	"encoding/json"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service/live"
	"github.com/apprun/apprun/service/store"
	"github.com/apprun/apprun/subjects"
)

// Hooks for the external tests (package engine_test), which run the
// engine on the real JetStream log (package eventlog imports engine, so
// they cannot be internal tests).

// MaxAttempts is how often a run is executed before it fails as interrupted.
const MaxAttempts = maxAttempts

// LiveMsg builds a live event as the hub hands it to followers.
func LiveMsg(seq, prev uint64, ev live.StreamEvent) live.Msg {
	return live.Msg{Seq: seq, Prev: prev, Ev: &live.Decoded{StreamEvent: ev, Streamed: true}}
}

// AdmissionRead is a price as an admission read it (AdmissionPrice).
type AdmissionRead = store.CheckedPrice

// AdmitAtPrice admits a run of slug charged at price p, read on the
// price's own subject, as a request that read it before it committed
// would.
func (s *Service) AdmitAtPrice(ctx context.Context, accountID, slug string, p engine.Price) (string, error) {
	return s.AdmitAtRead(ctx, accountID, slug, AdmissionRead{Price: p})
}

// AdmitAtRead is AdmitAtPrice at what AdmissionPrice read (a copy's
// subject, when it was read there).
func (s *Service) AdmitAtRead(ctx context.Context, accountID, slug string, p AdmissionRead) (string, error) {
	a, seq, err := s.Account(ctx, accountID)
	if err != nil {
		return "", err
	}
	created := engine.RunEvent{Type: engine.RunCreated, V: engine.EventVersion, RunNo: s.newRunNo(), Created: &engine.Created{
		AccountID: accountID, AppSlug: slug, Input: []byte(`{}`), CreditCost: p.CreditCost}}
	_, err = s.admit(ctx, created, a, seq, p, false, nil, nil)
	return created.RunNo, err
}

// RunLog is a run's events after seq after, with their sequences.
func (s *Service) RunLog(ctx context.Context, runNo string, after uint64) ([]Seqd, error) {
	evs, err := s.log.RunLog(ctx, runNo, after)
	out := make([]Seqd, len(evs))
	for i, le := range evs {
		out[i] = Seqd{Seq: le.Seq, Event: le.Event}
	}
	return out, err
}

// Seqd is a run event with its sequence.
type Seqd struct {
	Seq   uint64
	Event engine.RunEvent
}

// CountReadsInMemory switches the read limit to the standalone node's
// in-memory windows (limit > 0) or to the shared windows (0).
func (s *Service) CountReadsInMemory(limit int) {
	s.reads = nil
	if limit > 0 {
		s.reads = newLocalWindows(limit)
	}
}

// StopExecutor stops this node's executor (a benchmark measures admission alone).
func (s *Service) StopExecutor() { s.exec.stop() }

// WriteRunEvent appends ev to a run's log after seq last (CAS) and returns its sequence.
func (s *Service) WriteRunEvent(ctx context.Context, runNo string, last uint64, ev engine.RunEvent) (uint64, error) {
	w := &runWriter{svc: s, run: engine.Run{RunNo: runNo}, last: last}
	if err := w.write(ctx, ev); err != nil {
		return 0, err
	}
	return w.last, nil
}

// EncodeEntry encodes one run event as the log stores it.
func EncodeEntry(ev engine.RunEvent) ([]byte, error) { return json.Marshal(ev) }

// Streamed is the event as a stream sends it.
func Streamed(seq uint64, ev engine.RunEvent) (live.StreamEvent, bool) { return live.ToStream(seq, ev) }

// NewRunNo makes a run number.
func NewRunNo() string { return engine.NewRunNo(crand.Reader, time.Now()) }

// LoginHash is the password hash the log holds for email's login.
func (s *Service) LoginHash(ctx context.Context, email string) (string, error) {
	var login engine.LoginEvent
	_, err := s.log.Last(ctx, loginSubject(email), &login)
	return login.Hash, err
}

// DefaultDummyHash is the written-out hash unknown emails are checked against.
const DefaultDummyHash = defaultDummyHash

// PriceCopies is how many copies of a price the log keeps (price.go).
const PriceCopies = priceCopies

// PriceSubject and PriceCopySubject name a price and its copy i.
func PriceSubject(slug string) string            { return subjects.Price(slug) }
func PriceCopySubject(slug string, i int) string { return subjects.PriceCopy(slug, i) }

// AdmissionPrice is the price an admission of slug on e reads from the log.
func (s *Service) AdmissionPrice(ctx context.Context, slug string) (AdmissionRead, error) {
	p, _, err := s.admissionPrice(ctx, slug, false)
	return p, err
}

// CacheStale makes m the cached newest message of its subject, as a node
// that has not yet seen a newer one holds it.
func (s *Service) CacheStale(m port.Message) {
	s.log.ReplaceCached(m)
}

// ActiveKeys is how many active keys the log counts for an account.
func (s *Service) ActiveKeys(ctx context.Context, accountID string) (int, error) {
	n, _, err := s.activeKeys(ctx, accountID)
	return n, err
}
