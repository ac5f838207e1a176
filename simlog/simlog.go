// Package simlog is the engine's Log port in memory, for the simulation
// of the money path: the same compare-and-set and all-or-nothing batch
// semantics as the JetStream log (the conformance suite in port/logtest
// runs against both), plus the faults a real log has, injected by hooks a
// seeded driver sets: a write refused before it is stored, a timeout
// before it is stored and one after (its ack lost), and reads from a
// replica that lags. Every operation first calls Step, where the driver
// schedules its actors.
package simlog

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apprun/apprun/port"
)

// Fault is what goes wrong with one operation.
type Fault int

// The faults.
const (
	// None: the operation goes through.
	None Fault = iota
	// Refused: the log cannot be reached; nothing is stored (ErrUnavailable).
	Refused
	// LostBefore: the write times out before it is stored (ErrAmbiguous,
	// nothing stored).
	LostBefore
	// LostAck: the write is stored but its ack is lost (ErrAmbiguous,
	// stored).
	LostAck
)

// Hooks are how a driver steers the log. Nil hooks do nothing.
type Hooks struct {
	// Step runs before every operation: a scheduling point.
	Step func(ctx context.Context, op string)
	// Fault decides the fault of a write ("append") or a read ("last",
	// "read"; only Refused applies to reads).
	Fault func(ctx context.Context, op string) Fault
	// Lag is how many of the newest messages a Read does not see yet (a
	// replica behind the leader).
	Lag func(ctx context.Context) uint64
}

// Log is an in-memory event log.
type Log struct {
	mu    sync.Mutex
	hooks Hooks
	msgs  []port.Message // by sequence - 1; a purged one has Seq 0
	last  map[string]uint64
	subj  map[string][]uint64
}

var _ port.Log = (*Log)(nil)

// New makes an empty log.
func New() *Log {
	return &Log{last: map[string]uint64{}, subj: map[string][]uint64{}}
}

// SetHooks sets the driver's hooks.
func (l *Log) SetHooks(h Hooks) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hooks = h
}

func (l *Log) step(ctx context.Context, op string) Fault {
	l.mu.Lock()
	h := l.hooks
	l.mu.Unlock()
	if h.Step != nil {
		h.Step(ctx, op)
	}
	if h.Fault != nil {
		return h.Fault(ctx, op)
	}
	return None
}

// Append stores entries all or none, checking each compare-and-set in
// order against the log as the earlier entries of the batch leave it.
func (l *Log) Append(ctx context.Context, entries ...port.Entry) (uint64, error) {
	f := l.step(ctx, "append")
	switch f {
	case Refused:
		return 0, fmt.Errorf("%w: simulated: refused", port.ErrUnavailable)
	case LostBefore:
		return 0, fmt.Errorf("%w: simulated: timed out before it was stored", port.ErrAmbiguous)
	}
	if len(entries) == 0 {
		return 0, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	staged := map[string]uint64{}
	lastOf := func(s string) uint64 {
		if seq, ok := staged[s]; ok {
			return seq
		}
		return l.last[s]
	}
	next := uint64(len(l.msgs))
	for _, e := range entries {
		next++
		if e.Expect != nil {
			on := e.Subject
			if e.ExpectSubject != "" {
				on = e.ExpectSubject
			}
			if lastOf(on) != *e.Expect {
				return 0, port.ErrConflict
			}
		}
		staged[e.Subject] = next
	}
	for _, e := range entries {
		seq := uint64(len(l.msgs)) + 1
		l.msgs = append(l.msgs, port.Message{Subject: e.Subject, Seq: seq, Data: append([]byte(nil), e.Data...)})
		l.last[e.Subject] = seq
		if e.Rollup {
			for _, old := range l.subj[e.Subject] {
				l.msgs[old-1] = port.Message{}
			}
			l.subj[e.Subject] = nil
		}
		// A TTL is the substrate's to keep: the simulation runs on logical
		// time and keeps such messages.
		l.subj[e.Subject] = append(l.subj[e.Subject], seq)
	}
	if f == LostAck {
		return 0, fmt.Errorf("%w: simulated: stored, ack lost", port.ErrAmbiguous)
	}
	return uint64(len(l.msgs)), nil
}

// Last returns the newest message on subject (as the leader has it).
func (l *Log) Last(ctx context.Context, subject string) (port.Message, error) {
	if l.step(ctx, "last") == Refused {
		return port.Message{}, fmt.Errorf("%w: simulated: refused", port.ErrUnavailable)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	seq, ok := l.last[subject]
	if !ok {
		return port.Message{}, port.ErrNoMessage
	}
	return l.msgs[seq-1], nil
}

// Read calls fn with the messages on subject after after, as a replica
// that may lag (Hooks.Lag) has them.
func (l *Log) Read(ctx context.Context, subject string, after uint64, fn func(port.Message) error) error {
	if l.step(ctx, "read") == Refused {
		return fmt.Errorf("%w: simulated: refused", port.ErrUnavailable)
	}
	l.mu.Lock()
	visible := uint64(len(l.msgs))
	if l.hooks.Lag != nil {
		lag := l.hooks.Lag(ctx)
		visible -= min(lag, visible)
	}
	var seqs []uint64
	if strings.ContainsAny(subject, "*>") {
		for s, of := range l.subj {
			if matches(subject, s) {
				seqs = append(seqs, of...)
			}
		}
		slices.Sort(seqs)
	} else {
		seqs = l.subj[subject]
	}
	var out []port.Message
	for _, seq := range seqs {
		if seq > after && seq <= visible {
			out = append(out, l.msgs[seq-1])
		}
	}
	l.mu.Unlock()
	for _, m := range out {
		if err := fn(m); err != nil {
			return err
		}
	}
	return nil
}

// matches reports whether subject matches filter as NATS matches them:
// "*" is any one token, a last ">" one or more.
func matches(filter, subject string) bool {
	f, s := strings.Split(filter, "."), strings.Split(subject, ".")
	for i, tok := range f {
		switch {
		case tok == ">" && i == len(f)-1:
			return len(s) > i
		case i >= len(s) || tok != "*" && tok != s[i]:
			return false
		}
	}
	return len(f) == len(s)
}

// Head is the newest sequence.
func (l *Log) Head(ctx context.Context) (uint64, error) {
	if l.step(ctx, "head") == Refused {
		return 0, fmt.Errorf("%w: simulated: refused", port.ErrUnavailable)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return uint64(len(l.msgs)), nil
}

// Purge removes every message on subject.
func (l *Log) Purge(ctx context.Context, subject string) error {
	l.step(ctx, "purge")
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, seq := range l.subj[subject] {
		l.msgs[seq-1] = port.Message{}
	}
	delete(l.subj, subject)
	delete(l.last, subject)
	return nil
}

// Compact removes every message on subject but the last.
func (l *Log) Compact(ctx context.Context, subject string) error {
	l.step(ctx, "compact")
	l.mu.Lock()
	defer l.mu.Unlock()
	seqs := l.subj[subject]
	if len(seqs) <= 1 {
		return nil
	}
	for _, seq := range seqs[:len(seqs)-1] {
		l.msgs[seq-1] = port.Message{}
	}
	l.subj[subject] = seqs[len(seqs)-1:]
	return nil
}

// Subjects lists the subjects matching filter (exact, or a prefix ending
// in ">").
func (l *Log) Subjects(ctx context.Context, filter string) ([]string, error) {
	l.step(ctx, "subjects")
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	prefix, wild := strings.CutSuffix(filter, ">")
	for s := range l.last {
		if s == filter || wild && strings.HasPrefix(s, prefix) && len(s) > len(prefix) {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Available is always true: the simulation's faults are per operation.
func (l *Log) Available() bool { return true }

// Unavailable is always nil, as Available is always true.
func (l *Log) Unavailable() error { return nil }

// All returns every stored message in order (the audit reads it).
// Newest is the sequence of the newest message, without a step (for the
// simulation's checks, not for the engine).
func (l *Log) Newest() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return uint64(len(l.msgs))
}

func (l *Log) All() []port.Message {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]port.Message, 0, len(l.msgs))
	for _, m := range l.msgs {
		if m.Seq != 0 {
			out = append(out, m)
		}
	}
	return out
}

// Ports are the engine's ports on this log: windows that never refuse,
// and a queue and a live feed that deliver nothing (the simulation drives
// execution itself, with Engine.ExecuteRun).
func (l *Log) Ports() port.Set {
	return port.Set{Log: l, Queue: idleQueue{}, Live: idleLive{}, Windows: openWindows{}}
}

type idleQueue struct{}

func (idleQueue) Consume(context.Context, port.QueueSpec, func(port.QueueMsg)) (func(), error) {
	return func() {}, nil
}

type idleLive struct{}

func (idleLive) FollowRuns(func(port.LiveRunMsg)) (func(), error) { return func() {}, nil }

type openWindows struct{}

func (openWindows) Hit(context.Context, port.Window, string) (bool, int, time.Duration, error) {
	return true, -1, 0, nil
}

func (openWindows) Unavailable() error { return nil }
