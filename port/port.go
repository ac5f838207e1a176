// Package port names what the service needs from the infrastructure it
// runs on: the event Log (per-subject compare-and-set appends, atomic when
// there are several entries), the work Queue, the Live feed of run events,
// the rate-limit Windows and the WebhookSender; and what the website needs
// to send mail, the Mailer (mail.go). A log operation ends in
// success or one of four outcomes: ErrConflict (a check failed, nothing
// stored), ErrUnavailable (nothing stored), ErrNoMessage, or ErrAmbiguous
// (sent, outcome unknown), which the service resolves before it answers.
// Package eventlog implements the ports on NATS JetStream, package simlog
// in memory with injected faults; port/logtest is the conformance suite
// both pass.
package port

import (
	"context"
	"errors"
	"time"
)

// The ports: what the domain needs from the infrastructure it runs on.
// Package eventlog implements them on NATS JetStream; package simlog
// implements them in memory, with faults, for the simulation. One
// conformance suite (logtest) runs against both.

// Entry is one message of an append: a subject, its payload, and an
// optional compare-and-set check.
type Entry struct {
	Subject string
	Data    []byte
	// Expect, when not nil, is the sequence the last message on Subject
	// (or on ExpectSubject, when set) must have; 0 means "no message yet".
	Expect        *uint64
	ExpectSubject string
	// TTL, when not zero, is how long the message is kept (at least one
	// second): records that are no part of the billing history expire.
	TTL time.Duration
	// Rollup: once stored, this message is the only one on Subject (its
	// earlier messages are removed), for records whose last value is all
	// that is ever read.
	Rollup bool
	// Lazy: nothing waits on this write but its own caller, so the log
	// may store it with other appends rather than on its own (eventlog:
	// in the next group commit's batch, which then costs no write of its
	// own; with nothing to share one, a plain write). The outcomes are the
	// same. Only for a single entry with no
	// Expect: a check that failed would fail the appends it shares a
	// batch with.
	Lazy bool
}

// Message is one stored message.
type Message struct {
	Subject string
	Seq     uint64
	Data    []byte
}

// The outcomes of a log operation other than success. Every Log
// implementation returns exactly these (wrapped with context): the domain
// never sees a substrate error.
var (
	// ErrConflict: a compare-and-set check failed; nothing was stored.
	ErrConflict = errors.New("event log: concurrent write (compare-and-set failed), nothing stored")
	// ErrUnavailable: the log could not be reached or refused the write;
	// nothing was stored and a retry may succeed.
	ErrUnavailable = errors.New("event log unavailable")
	// ErrAmbiguous: the write was sent but its outcome is unknown (a
	// timeout, a lost acknowledgement, a leader change): it may be stored.
	// The domain must resolve it before it answers.
	ErrAmbiguous = errors.New("event log: write sent, outcome unknown")
	// ErrNoMessage is the expected absence of any message on a subject.
	ErrNoMessage = errors.New("event log: no message on subject")
	// ErrTooLarge: a message is larger than the log takes (JetStream's
	// max_payload); it was refused before it was sent, nothing stored.
	// Trying it again is no use.
	ErrTooLarge = errors.New("event log: message larger than the log takes, nothing stored")
)

// Log is the event log: per-subject compare-and-set appends, atomic when
// there are several entries, and reads that see every acknowledged write.
type Log interface {
	// Append stores entries all or none, in order, and returns the
	// sequence of the last one (the others precede it contiguously).
	Append(ctx context.Context, entries ...Entry) (uint64, error)
	// Last returns the newest message on subject, or ErrNoMessage.
	Last(ctx context.Context, subject string) (Message, error)
	// Read calls fn with each message on subject after sequence after, in
	// order. subject may hold wildcards ("*" a token, a last ">" the
	// rest): each message then carries its own subject. fn runs on one
	// goroutine at a time.
	Read(ctx context.Context, subject string, after uint64, fn func(Message) error) error
	// Head is the sequence of the newest message in the log.
	Head(ctx context.Context) (uint64, error)
	// Purge removes every message on subject.
	Purge(ctx context.Context, subject string) error
	// Compact removes every message on subject but the last, which stays
	// with its sequence (a compare-and-set on it still holds).
	Compact(ctx context.Context, subject string) error
	// Subjects lists the subjects that match filter (a trailing ">"
	// matches the rest).
	Subjects(ctx context.Context, filter string) ([]string, error)
	// Available reports, without a request, whether the log can be
	// reached now: while it cannot, every request fails at once.
	Available() bool
	// Unavailable is why the log cannot be reached now (no connection, no
	// leader, its stream missing), or nil while it is Available. Its text
	// is /readyz's reason: it names no address or credential.
	Unavailable() error
}

// Queue delivers the log's work items (jobs, webhook deliveries) to one
// consumer at a time across every node, again until acknowledged.
type Queue interface {
	Consume(ctx context.Context, spec QueueSpec, fn func(QueueMsg)) (stop func(), err error)
}

// QueueSpec names a durable work queue over the subjects matching Filter.
type QueueSpec struct {
	Name   string
	Filter string
	// AckWait is how long an item may go unacknowledged (and without
	// InProgress) before it is delivered again.
	AckWait    time.Duration
	MaxPending int
	// Batch is how many items are fetched at once.
	Batch int
}

// QueueMsg is one delivery of a work item.
type QueueMsg interface {
	Subject() string
	Data() []byte
	// Attempt counts deliveries of this item, from 1.
	Attempt() uint64
	Ack()
	Nak(delay time.Duration)
	// Term drops the item for good.
	Term()
	InProgress()
}

// LiveRunMsg is one run event as it is stored, pushed to every node: Prev
// is the sequence of the run's event before it (0 for the first), so a
// follower sees a gap.
type LiveRunMsg struct {
	RunNo     string
	Seq, Prev uint64
	Data      []byte
}

// Live pushes every stored run event to this node.
type Live interface {
	FollowRuns(fn func(LiveRunMsg)) (stop func(), err error)
}

// Windows count requests in shared sliding one-minute windows, exactly
// across nodes.
type Windows interface {
	// Hit counts one request of key in the window named window (Limits
	// says its size); ok is false, with nothing counted, when the window
	// is full. reset is when its oldest counted request leaves; remaining
	// is -1 when it could not be read.
	Hit(ctx context.Context, window Window, key string) (ok bool, remaining int, reset time.Duration, err error)
	// Unavailable is why the windows cannot count requests now (lost by
	// a server that restarted, and not made again yet), or nil while they
	// can. Its text is /readyz's reason.
	Unavailable() error
}

// Window names a rate-limit window.
type Window int

// The windows.
const (
	WindowCreate Window = iota
	WindowRead
)

// Set are the service's infrastructure.
type Set struct {
	Log     Log
	Queue   Queue
	Live    Live
	Windows Windows
}

// ErrNotFound is the expected absence of a record in a read model.
var ErrNotFound = errors.New("not found")
