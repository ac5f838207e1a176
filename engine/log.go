package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// errConflict is a failed compare-and-set: someone wrote the subject first.
var errConflict = errors.New("engine: concurrent write, retry")

// ErrUnavailable marks a failure of the event log that stored nothing and
// is worth retrying: NATS unreachable, or a batch cut short in transit.
var ErrUnavailable = errors.New("event log unavailable")

// errUnavailable: the connection to NATS is down; fail fast instead of
// waiting out a timeout.
var errUnavailable = fmt.Errorf("engine: %w: not connected to NATS", ErrUnavailable)

// errNoMessage is the expected absence of any message on a subject.
var errNoMessage = errors.New("engine: no message on subject")

// JetStream API error codes apprun reacts to.
const (
	jsErrWrongLastSeq    = 10071
	jsErrWrongLastSeqCl  = 10164
	jsErrMaxMsgsPerSubj  = 10077
	jsErrBatchIncomplete = 10176
)

// entry is one message of a write: subject, value and optional checks.
type entry struct {
	subject string
	value   any
	// expect, when not nil, is the sequence the last message on subject
	// (or on expectSubject, when set) must have; 0 means "no message yet".
	expect        *uint64
	expectSubject string
}

func expectSeq(seq uint64) *uint64 { return &seq }

// eventLog is apprun's view of the JetStream stream: typed reads and
// all-or-nothing writes with per-subject compare-and-set.
type eventLog struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	stream  jetstream.Stream
	timeout time.Duration
	// appended counts messages stored by this node.
	appended atomic.Uint64
	// readers bounds the run-log reads in flight: the server answers one
	// connection's direct gets one after another anyway, and every read
	// waiting for its turn with a subscription and delivered messages
	// held is memory (10,000 streams opened at once made 100 MB of it).
	readers chan struct{}
}

// maxLogReaders is how many run-log reads one node makes at once.
const maxLogReaders = 32

func newEventLog(nc *nats.Conn, js jetstream.JetStream, timeout time.Duration) *eventLog {
	return &eventLog{nc: nc, js: js, timeout: timeout, readers: make(chan struct{}, maxLogReaders)}
}

func (l *eventLog) msg(e entry) (*nats.Msg, error) {
	data, err := json.Marshal(e.value)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", e.subject, err)
	}
	m := nats.NewMsg(e.subject)
	m.Data = data
	if e.expect != nil {
		m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(*e.expect, 10))
		if e.expectSubject != "" {
			m.Header.Set("Nats-Expected-Last-Subject-Sequence-Subject", e.expectSubject)
		}
	}
	return m, nil
}

// append writes entries atomically (one JetStream atomic batch when more
// than one) and returns the stream sequence of the last one; the others
// precede it in order. A failed check returns errConflict and stores nothing.
func (l *eventLog) append(ctx context.Context, entries ...entry) (uint64, error) {
	if !l.nc.IsConnected() {
		return 0, errUnavailable
	}
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	msgs := make([]*nats.Msg, len(entries))
	for i, e := range entries {
		m, err := l.msg(e)
		if err != nil {
			return 0, err
		}
		msgs[i] = m
	}
	if len(msgs) == 1 {
		seq, err := l.publishOne(ctx, msgs[0])
		if err == nil {
			l.appended.Add(1)
		}
		return seq, err
	}
	id := nuid.Next()
	for i, m := range msgs {
		m.Header.Set("Nats-Batch-Id", id)
		m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(i+1))
		if i < len(msgs)-1 {
			if err := l.nc.PublishMsg(m); err != nil {
				return 0, fmt.Errorf("batch publish %s: %w", m.Subject, err)
			}
			continue
		}
		m.Header.Set("Nats-Batch-Commit", "1")
		resp, err := l.nc.RequestMsgWithContext(ctx, m)
		if err != nil {
			return 0, fmt.Errorf("batch commit: %w", err)
		}
		seq, err := parseAck(resp.Data)
		if err == nil {
			l.appended.Add(uint64(len(msgs)))
		}
		return seq, err
	}
	return 0, nil
}

func (l *eventLog) publishOne(ctx context.Context, m *nats.Msg) (uint64, error) {
	ack, err := l.js.PublishMsg(ctx, m)
	if err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && isConflict(int(apiErr.ErrorCode)) {
			return 0, errConflict
		}
		return 0, fmt.Errorf("publish %s: %w", m.Subject, err)
	}
	return ack.Sequence, nil
}

func isConflict(code int) bool { return code == jsErrWrongLastSeq || code == jsErrWrongLastSeqCl }

type pubAck struct {
	Error *struct {
		Code        int    `json:"code"`
		ErrCode     int    `json:"err_code"`
		Description string `json:"description"`
	} `json:"error"`
	Seq uint64 `json:"seq"`
}

func parseAck(data []byte) (uint64, error) {
	var a pubAck
	if err := json.Unmarshal(data, &a); err != nil {
		return 0, fmt.Errorf("batch ack %q: %w", data, err)
	}
	if a.Error != nil {
		if isConflict(a.Error.ErrCode) {
			return 0, errConflict
		}
		if a.Error.ErrCode == jsErrBatchIncomplete {
			// Part of the batch was lost in transit (a reconnect): the
			// server stored none of it.
			return 0, fmt.Errorf("engine: %w: %s", ErrUnavailable, a.Error.Description)
		}
		return 0, fmt.Errorf("batch rejected: %s (err_code %d)", a.Error.Description, a.Error.ErrCode)
	}
	return a.Seq, nil
}

// last decodes the newest message on subject into v and returns its sequence.
func (l *eventLog) last(ctx context.Context, subject string, v any) (uint64, error) {
	if !l.nc.IsConnected() {
		return 0, errUnavailable
	}
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	m, err := l.stream.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return 0, errNoMessage
		}
		return 0, fmt.Errorf("read %s: %w", subject, err)
	}
	if err := json.Unmarshal(m.Data, v); err != nil {
		return 0, fmt.Errorf("decode %s@%d: %w", subject, m.Sequence, err)
	}
	return m.Sequence, nil
}

// runLogBatch is how many events one direct-get request returns.
const runLogBatch = 1024

// runLog reads the events of a run after seq `after`, in order: batched
// direct gets of runLogBatch events (any replica answers).
func (l *eventLog) runLog(ctx context.Context, runNo string, after uint64) ([]loggedEvent, error) {
	var out []loggedEvent
	err := l.eachRunEvent(ctx, runNo, after, func(le loggedEvent) error {
		out = append(out, le)
		return nil
	})
	return out, err
}

// eachRunEvent calls fn with each event of a run after seq `after`, in
// order, as the batched direct gets deliver them: decoding overlaps the
// server reading the next events. fn runs on one goroutine at a time.
func (l *eventLog) eachRunEvent(ctx context.Context, runNo string, after uint64, fn func(loggedEvent) error) error {
	if !l.nc.IsConnected() {
		return errUnavailable
	}
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	select {
	case l.readers <- struct{}{}:
		defer func() { <-l.readers }()
	case <-ctx.Done():
		return fmt.Errorf("read %s: waiting for a turn: %w", runSubject(runNo), ctx.Err())
	}
	subj := runSubject(runNo)
	from := after + 1 // only the handler moves it, and never while a batch is read
	handle := func(m *nats.Msg) error {
		seq, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
		if err != nil {
			return fmt.Errorf("read %s: message without a sequence", subj)
		}
		if seq < from {
			return nil // already handled by an earlier attempt
		}
		var e RunEvent
		if err := json.Unmarshal(m.Data, &e); err != nil {
			return fmt.Errorf("decode %s@%d: %w", subj, seq, err)
		}
		if err := fn(loggedEvent{Seq: seq, Event: e}); err != nil {
			return err
		}
		from = seq + 1
		return nil
	}
	for {
		n, pending, err := l.directBatchRetry(ctx, subj, &from, handle)
		if err != nil {
			return err
		}
		if pending == 0 || n == 0 {
			return nil
		}
	}
}

// directBatchRetry asks up to three times, a second each: in a cluster a
// request can go to a replica that has just died and never answers. Each
// attempt starts at *from, which the handler advances.
func (l *eventLog) directBatchRetry(ctx context.Context, subject string, from *uint64, handle func(*nats.Msg) error) (int, uint64, error) {
	var err error
	for range 3 {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		var n int
		var pending uint64
		n, pending, err = l.directBatch(actx, subject, *from, runLogBatch, handle)
		cancel()
		if err == nil || ctx.Err() != nil || errors.Is(err, errHandler) {
			return n, pending, err
		}
	}
	return 0, 0, err
}

// errHandler marks an error a batch's handler returned: not retried.
var errHandler = errors.New("engine: direct get handler")

// directBatch asks the stream for up to n messages on subject from
// sequence seq on (a batched direct get, answered by any replica), hands
// each to handle as it arrives, and returns how many it handled and how
// many more there are. No handle call runs after it returns.
func (l *eventLog) directBatch(ctx context.Context, subject string, seq uint64, n int, handle func(*nats.Msg) error) (int, uint64, error) {
	req, err := json.Marshal(struct {
		Seq     uint64 `json:"seq"`
		NextFor string `json:"next_by_subj"`
		Batch   int    `json:"batch"`
	}{seq, subject, n})
	if err != nil {
		return 0, 0, err
	}
	var (
		mu      sync.Mutex // held while handling; stopped ends handling
		stopped bool
		handled int
		pending uint64
		fail    error
		done    = make(chan struct{})
	)
	// A callback subscription queues without the 64k-slot channel a
	// synchronous one allocates; the callback runs on one goroutine.
	inbox := l.nc.NewRespInbox()
	sub, err := l.nc.Subscribe(inbox, func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		switch status := m.Header.Get("Status"); status {
		case "":
			if err := handle(m); err != nil {
				fail = fmt.Errorf("%w: %w", errHandler, err)
				break
			}
			handled++
			return
		case "204": // end of batch
			pending, _ = strconv.ParseUint(m.Header.Get("Nats-Num-Pending"), 10, 64)
		case "404": // nothing at or after seq
		default:
			fail = fmt.Errorf("direct get %s from %d: status %s %s", subject, seq, status, m.Header.Get("Description"))
		}
		stopped = true
		close(done)
	})
	if err != nil {
		return 0, 0, fmt.Errorf("direct get %s: %w", subject, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := l.nc.PublishRequest("$JS.API.DIRECT.GET."+StreamName, inbox, req); err != nil {
		return 0, 0, fmt.Errorf("direct get %s: %w", subject, err)
	}
	select {
	case <-done:
		return handled, pending, fail
	case <-ctx.Done():
		mu.Lock()
		stopped = true
		mu.Unlock()
		return handled, 0, fmt.Errorf("direct get %s from %d: %w", subject, seq, ctx.Err())
	}
}

// loggedEvent is a run event with its stream sequence, the SSE id.
type loggedEvent struct {
	Seq   uint64
	Event RunEvent
}

// ensureStreams creates or updates apprun's streams and returns the event
// log and the rate-limit windows that are on (by stream name).
func ensureStreams(ctx context.Context, js jetstream.JetStream, lim Limits, replicas int) (jetstream.Stream, map[string]jetstream.Stream, error) {
	st, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:               StreamName,
		Description:        "apprun event log: accounts, keys, prices, runs",
		Subjects:           streamSubjects(),
		Storage:            jetstream.FileStorage,
		Replicas:           replicas,
		AllowDirect:        true,
		AllowAtomicPublish: true,
		Duplicates:         2 * time.Minute,
		RePublish:          &jetstream.RePublish{Source: subjRun + ">", Destination: subjLive + "run.>"},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("stream %s: %w", StreamName, err)
	}
	windows := map[string]jetstream.Stream{}
	for _, rl := range []struct {
		name, subj string
		limit      int
	}{{streamRLCreate, subjRLC, lim.CreatePerMinute}, {streamRLRead, subjRLR, lim.ReadsPerMinute}} {
		if rl.limit <= 0 {
			continue
		}
		w, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name:                 rl.name,
			Description:          "apprun sliding-window rate limit: one message per counted request",
			Subjects:             []string{rl.subj + "*"},
			Storage:              jetstream.MemoryStorage,
			Replicas:             replicas,
			MaxAge:               time.Minute,
			MaxMsgsPerSubject:    int64(rl.limit),
			Discard:              jetstream.DiscardNew,
			DiscardNewPerSubject: true,
			AllowDirect:          true,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("stream %s: %w", rl.name, err)
		}
		windows[rl.name] = w
	}
	return st, windows, nil
}
