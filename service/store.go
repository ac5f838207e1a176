package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/subjects"
)

// entry is one message of a write in domain terms: a value to encode.
type entry struct {
	subject string
	value   any
	// expect, when not nil, is the sequence the last message on subject
	// (or on expectSubject, when set) must have; 0 means "no message yet".
	expect        *uint64
	expectSubject string
	ttl           time.Duration
	rollup        bool
	lazy          bool
}

func expectSeq(seq uint64) *uint64 { return &seq }

// store is the engine's typed view of the Log port: it encodes and decodes
// the domain's events and counts what it appended.
type store struct {
	log      port.Log
	appended atomic.Uint64
	// cache: the newest message of the subjects admissions read
	// (lastcache.go).
	cache lastCache
}

// append encodes entries and writes them atomically; it returns the
// sequence of the last one.
func (s *store) append(ctx context.Context, entries ...entry) (uint64, error) {
	out, err := encode(entries)
	if err != nil {
		return 0, err
	}
	return s.appendEncoded(ctx, out)
}

// appendEncoded is append of entries already encoded.
func (s *store) appendEncoded(ctx context.Context, out []port.Entry) (uint64, error) {
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

// encode turns typed entries into the Log port's.
func encode(entries []entry) ([]port.Entry, error) {
	out := make([]port.Entry, len(entries))
	for i, e := range entries {
		data, err := json.Marshal(e.value)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", e.subject, err)
		}
		out[i] = port.Entry{Subject: e.subject, Data: data, Expect: e.expect, ExpectSubject: e.expectSubject, TTL: e.ttl, Rollup: e.rollup, Lazy: e.lazy}
	}
	return out, nil
}

// last decodes the newest message on subject into v and returns its sequence.
func (s *store) last(ctx context.Context, subject string, v any) (uint64, error) {
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
	if err != nil {
		return 0, err
	}
	return m.Seq, decodeMessage(m, v)
}

// lastFrom is last, answered from the cache when cached is set and the
// cache holds the subject (hit; lastcache.go says when that is exact).
func (s *store) lastFrom(ctx context.Context, cached bool, subject string, v any) (seq uint64, hit bool, err error) {
	m, ok := s.cache.get(subject)
	if !cached || !ok {
		seq, err := s.last(ctx, subject, v)
		return seq, false, err
	}
	if m.Seq == 0 {
		return 0, true, port.ErrNoMessage
	}
	return m.Seq, true, decodeMessage(m, v)
}

func decodeMessage(m port.Message, v any) error {
	if err := json.Unmarshal(m.Data, v); err != nil {
		return fmt.Errorf("decode %s@%d: %w", m.Subject, m.Seq, err)
	}
	return nil
}

// loggedEvent is a run event with its stream sequence, the SSE id.
type loggedEvent struct {
	Seq   uint64
	Event engine.RunEvent
}

// runLog reads the events of a run after seq `after`, in order.
func (s *store) runLog(ctx context.Context, runNo string, after uint64) ([]loggedEvent, error) {
	var out []loggedEvent
	err := s.eachRunEvent(ctx, runNo, after, func(le loggedEvent) error {
		out = append(out, le)
		return nil
	})
	return out, err
}

// eachRunEvent calls fn with each event of a run after seq `after`, in
// order, decoding each as it arrives.
func (s *store) eachRunEvent(ctx context.Context, runNo string, after uint64, fn func(loggedEvent) error) error {
	subj := subjects.Run(runNo)
	return s.log.Read(ctx, subj, after, func(m port.Message) error {
		e, err := engine.DecodeRunEvent(m.Data)
		if err != nil {
			return fmt.Errorf("decode %s@%d: %w", subj, m.Seq, err)
		}
		return fn(loggedEvent{Seq: m.Seq, Event: e})
	})
}

// isAmbiguous reports whether err leaves a write's outcome unknown.
func isAmbiguous(err error) bool { return errors.Is(err, port.ErrAmbiguous) }
