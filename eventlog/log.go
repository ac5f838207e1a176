package eventlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apprun/apprun/port"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// JetStream API error codes apprun reacts to.
const (
	jsErrWrongLastSeq    = 10071
	jsErrWrongLastSeqCl  = 10164
	jsErrMaxMsgsPerSubj  = 10077
	jsErrBatchIncomplete = 10176
	jsErrNoMessage       = 10037
)

// errNotConnected: the connection to NATS is down, or the stream has had
// no leader for a while (probe.go); fail fast instead of
// waiting out a timeout.
var errNotConnected = fmt.Errorf("eventlog: %w: the event log is unreachable (no NATS connection, or no stream leader)", port.ErrUnavailable)

// Log is engine.Log on the APPRUN stream: compare-and-set appends with
// Nats-Expected-Last-Subject-Sequence, atomic batches (ADR-50) for several
// entries, and direct gets for reads.
type Log struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	stream  jetstream.Stream
	timeout time.Duration
	// replicated: the stream has followers, whose direct gets may lag the
	// leader; Last then asks the leader, and Read checks it got as far.
	replicated bool
	// readers bounds the subject reads in flight: the server answers one
	// connection's direct gets one after another anyway, and every read
	// waiting for its turn with a subscription and delivered messages
	// held is memory (10,000 streams opened at once made 100 MB of it).
	readers chan struct{}
	// down: the stream has had no leader for downAfter probes (probe.go).
	down atomic.Bool
	// why the last probe found the log unusable (probe.go).
	why atomic.Pointer[error]
	// quorum, when not nil, says whether a majority of the cluster is
	// reachable (probe.go).
	quorum func() bool
	// storeFailed, when not nil, says why the server's store takes no
	// more writes ("" while it does: probe.go).
	storeFailed func() string
	logger      *slog.Logger
	// group commits concurrent multi-entry appends together (group.go).
	group group
}

// maxLogReaders is how many subject reads one node makes at once.
const maxLogReaders = 32

var _ port.Log = (*Log)(nil)

func (l *Log) msg(e port.Entry) *nats.Msg {
	m := nats.NewMsg(e.Subject)
	m.Data = e.Data
	if e.Expect != nil {
		m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(*e.Expect, 10))
		if e.ExpectSubject != "" {
			m.Header.Set("Nats-Expected-Last-Subject-Sequence-Subject", e.ExpectSubject)
		}
	}
	if e.TTL > 0 {
		m.Header.Set(jetstream.MsgTTLHeader, strconv.FormatInt(int64(max(e.TTL, time.Second)/time.Second), 10))
	}
	if e.Rollup {
		m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	}
	return m
}

// Append writes entries atomically (one JetStream atomic batch when more
// than one) and returns the stream sequence of the last one. Every error
// is one of the port's: a failed check is ErrConflict, a write that cannot
// have been stored ErrUnavailable, one whose answer never came ErrAmbiguous.
func (l *Log) Append(ctx context.Context, entries ...port.Entry) (uint64, error) {
	if !l.Available() {
		return 0, errNotConnected
	}
	if len(entries) > 1 || (entries[0].Lazy && entries[0].Expect == nil) {
		return l.group.append(ctx, entries) // group.go
	}
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	return l.publishOne(ctx, l.msg(entries[0]))
}

// batch writes entries as one JetStream atomic batch.
func (l *Log) batch(ctx context.Context, entries []port.Entry) (uint64, error) {
	if !l.Available() {
		return 0, errNotConnected
	}
	id := nuid.Next()
	for i, e := range entries {
		m := l.msg(e)
		m.Header.Set("Nats-Batch-Id", id)
		m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(i+1))
		if i < len(entries)-1 {
			if err := l.nc.PublishMsg(m); err != nil {
				// No commit was sent: the server drops the batch.
				if errors.Is(err, nats.ErrMaxPayload) {
					return 0, fmt.Errorf("%w: batch publish %s: %w", port.ErrTooLarge, m.Subject, err)
				}
				return 0, fmt.Errorf("%w: batch publish %s: %w", port.ErrUnavailable, m.Subject, err)
			}
			continue
		}
		m.Header.Set("Nats-Batch-Commit", "1")
		resp, err := l.nc.RequestMsgWithContext(ctx, m)
		if err != nil {
			return 0, sendError("batch commit", err)
		}
		return parseAck(resp.Data)
	}
	return 0, nil
}

func (l *Log) publishOne(ctx context.Context, m *nats.Msg) (uint64, error) {
	ack, err := l.js.PublishMsg(ctx, m)
	if err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) {
			if isConflict(int(apiErr.ErrorCode)) {
				return 0, port.ErrConflict
			}
			return 0, fmt.Errorf("%w: publish %s rejected: %w", port.ErrUnavailable, m.Subject, err)
		}
		return 0, sendError("publish "+m.Subject, err)
	}
	return ack.Sequence, nil
}

// sendError classifies an error of a write that was sent: no responders
// means no stream took it, an invalid connection that it never left;
// anything else leaves the outcome unknown: a timeout, and a connection
// closed while the answer was awaited (the write may have been stored).
func sendError(op string, err error) error {
	if errors.Is(err, nats.ErrMaxPayload) {
		return fmt.Errorf("%w: %s: %w", port.ErrTooLarge, op, err) // checked by the client before sending
	}
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrInvalidConnection) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) {
		return fmt.Errorf("%w: %s: %w", port.ErrUnavailable, op, err)
	}
	return fmt.Errorf("%w: %s: %w", port.ErrAmbiguous, op, err)
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
		return 0, fmt.Errorf("%w: batch ack %q: %w", port.ErrAmbiguous, data, err)
	}
	if a.Error != nil {
		if isConflict(a.Error.ErrCode) {
			return 0, port.ErrConflict
		}
		// Part of the batch was lost in transit (a reconnect), or the
		// stream refused it: the server stored none of it.
		return 0, fmt.Errorf("%w: batch rejected: %s (err_code %d)", port.ErrUnavailable, a.Error.Description, a.Error.ErrCode)
	}
	return a.Seq, nil
}

// Last returns the newest message on subject, as the stream leader has
// it: it includes every acknowledged write, so a decision or an answer
// made from it is never stale (a replica's direct get may be behind).
func (l *Log) Last(ctx context.Context, subject string) (port.Message, error) {
	if !l.Available() {
		return port.Message{}, errNotConnected
	}
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	if l.replicated {
		m, err := l.leaderLast(ctx, subject)
		if err == nil || errors.Is(err, port.ErrNoMessage) {
			return m, err
		}
		// No leader to ask (an election): a replica's answer may be
		// behind, but a compare-and-set made on it still cannot be wrong.
	}
	m, err := l.stream.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return port.Message{}, port.ErrNoMessage
		}
		return port.Message{}, fmt.Errorf("%w: read %s: %w", port.ErrUnavailable, subject, err)
	}
	return port.Message{Subject: m.Subject, Seq: m.Sequence, Data: m.Data}, nil
}

// leaderWait bounds a leader read: during an election no one answers it,
// and the caller must keep time to ask a replica instead.
const leaderWait = time.Second

// leaderLast asks the stream leader (the stream API, not a direct get)
// for the last message on subject, waiting at most leaderWait.
func (l *Log) leaderLast(ctx context.Context, subject string) (port.Message, error) {
	ctx, cancel := context.WithTimeout(ctx, leaderWait)
	defer cancel()
	req, _ := json.Marshal(struct {
		LastFor string `json:"last_by_subj"`
	}{subject})
	resp, err := l.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+StreamName, req)
	if err != nil {
		return port.Message{}, fmt.Errorf("%w: read %s: %w", port.ErrUnavailable, subject, err)
	}
	var r struct {
		Message *struct {
			Subject string `json:"subject"`
			Seq     uint64 `json:"seq"`
			Data    []byte `json:"data"`
		} `json:"message"`
		Error *struct {
			Code        int    `json:"code"`
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &r); err != nil {
		return port.Message{}, fmt.Errorf("%w: read %s: %w", port.ErrUnavailable, subject, err)
	}
	switch {
	case r.Error != nil && r.Error.ErrCode == jsErrNoMessage:
		return port.Message{}, port.ErrNoMessage
	case r.Error != nil:
		return port.Message{}, fmt.Errorf("%w: read %s: %s (err_code %d)", port.ErrUnavailable, subject, r.Error.Description, r.Error.ErrCode)
	case r.Message == nil:
		return port.Message{}, fmt.Errorf("%w: read %s: empty answer", port.ErrUnavailable, subject)
	}
	return port.Message{Subject: r.Message.Subject, Seq: r.Message.Seq, Data: r.Message.Data}, nil
}

// Head is the sequence of the newest message in the stream.
func (l *Log) Head(ctx context.Context) (uint64, error) {
	if !l.Available() {
		return 0, errNotConnected
	}
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	info, err := l.stream.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("%w: log head: %w", port.ErrUnavailable, err)
	}
	return info.State.LastSeq, nil
}

// Compact removes every message on subject but the last.
func (l *Log) Compact(ctx context.Context, subject string) error {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	if err := l.stream.Purge(ctx, jetstream.WithPurgeSubject(subject), jetstream.WithPurgeKeep(1)); err != nil {
		return fmt.Errorf("%w: compact %s: %w", port.ErrUnavailable, subject, err)
	}
	return nil
}

// Purge removes every message on subject.
func (l *Log) Purge(ctx context.Context, subject string) error {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	if err := l.stream.Purge(ctx, jetstream.WithPurgeSubject(subject)); err != nil {
		return fmt.Errorf("%w: purge %s: %w", port.ErrUnavailable, subject, err)
	}
	return nil
}

// Subjects lists the stream's subjects matching filter.
func (l *Log) Subjects(ctx context.Context, filter string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	info, err := l.stream.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, fmt.Errorf("%w: list %s: %w", port.ErrUnavailable, filter, err)
	}
	out := make([]string, 0, len(info.State.Subjects))
	for s := range info.State.Subjects {
		out = append(out, s)
	}
	return out, nil
}

// Available reports whether the connection to NATS is up.
func (l *Log) Available() bool { return l.nc.IsConnected() && !l.down.Load() }

// readBatch is how many messages one direct-get request returns.
const readBatch = 1024

// Read calls fn with each message on subject after sequence after, in
// order, as the batched direct gets deliver them: decoding overlaps the
// server reading the next ones.
func (l *Log) Read(ctx context.Context, subject string, after uint64, fn func(port.Message) error) error {
	if !l.Available() {
		return errNotConnected
	}
	// The read's deadline is a context of its own, not one derived from
	// the caller's: a context keeps the map it makes for its children for
	// as long as it lives, so a long-lived caller (an event stream, which
	// reads its run's log as it opens) kept one for good, about half a
	// KiB a stream. The caller's context still ends the wait for a turn
	// and the read between batches, and an earlier deadline of its own
	// is kept.
	caller := ctx
	// Each request is bounded by the log's timeout (or the caller's
	// earlier deadline), not the whole read: a finished run of 100,000
	// events took more than 5 s to read on a busy machine, and its stream
	// was cut (issue 50). A read that makes no progress for that long
	// still ends.
	step := func() (context.Context, context.CancelFunc) {
		timeout := l.timeout
		if d, ok := caller.Deadline(); ok {
			timeout = min(timeout, time.Until(d))
		}
		return context.WithTimeout(context.Background(), timeout)
	}
	ctx, cancel := step()
	select {
	case l.readers <- struct{}{}:
		defer func() { <-l.readers }()
	case <-caller.Done():
		cancel()
		return fmt.Errorf("%w: read %s: waiting for a turn: %w", port.ErrUnavailable, subject, caller.Err())
	case <-ctx.Done():
		cancel()
		return fmt.Errorf("%w: read %s: waiting for a turn: %w", port.ErrUnavailable, subject, ctx.Err())
	}
	cancel()
	// On a replicated stream the direct gets may come from a replica that
	// is behind: learn from the leader how far the subject goes, and read
	// until there.
	var want uint64
	if l.replicated {
		ctx, cancel := step()
		m, err := l.leaderLast(ctx, subject)
		cancel()
		switch {
		case errors.Is(err, port.ErrNoMessage):
			return nil
		case err == nil:
			want = m.Seq
		}
		// With no leader to ask (an election), read what the replicas have.
	}
	from := after + 1 // only the handler moves it, and never while a batch is read
	handle := func(m *nats.Msg) error {
		seq, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
		if err != nil {
			return fmt.Errorf("read %s: message without a sequence", subject)
		}
		if seq < from {
			return nil // already handled by an earlier attempt
		}
		subj := subject
		if s := m.Header.Get(jetstream.SubjectHeader); s != "" {
			subj = s // a wildcard's match
		}
		if err := fn(port.Message{Subject: subj, Seq: seq, Data: m.Data}); err != nil {
			return err
		}
		from = seq + 1
		return nil
	}
	progressed := time.Now()
	for {
		if err := caller.Err(); err != nil {
			return fmt.Errorf("%w: read %s: %w", port.ErrUnavailable, subject, err)
		}
		ctx, cancel := step()
		n, pending, err := l.directBatchRetry(ctx, subject, &from, handle)
		cancel()
		if err != nil {
			return err
		}
		if from > want && (pending == 0 || n == 0) {
			return nil
		}
		if n > 0 {
			progressed = time.Now()
			continue
		}
		// Nothing read: the replica that answered is behind the leader.
		// Ask again, for as long as one request may take.
		if time.Since(progressed) > l.timeout {
			return fmt.Errorf("%w: read %s: replicas behind sequence %d for %s", port.ErrUnavailable, subject, want, l.timeout)
		}
		if pending == 0 {
			select {
			case <-caller.Done():
				return fmt.Errorf("%w: read %s: %w", port.ErrUnavailable, subject, caller.Err())
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
}

// directBatchRetry asks up to three times, a second each: in a cluster a
// request can go to a replica that has just died and never answers. Each
// attempt starts at *from, which the handler advances.
func (l *Log) directBatchRetry(ctx context.Context, subject string, from *uint64, handle func(*nats.Msg) error) (int, uint64, error) {
	var (
		n       int
		pending uint64
		err     error
	)
	for range 3 {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		n, pending, err = directBatch(actx, l.nc, StreamName, subject, *from, readBatch, handle)
		cancel()
		if err == nil || ctx.Err() != nil || errors.Is(err, errHandler) {
			break
		}
	}
	var h *handlerError
	if errors.As(err, &h) {
		return 0, 0, h.err
	}
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %w", port.ErrUnavailable, err)
	}
	return n, pending, nil
}

// errHandler marks an error a batch's handler returned: not retried, and
// passed on as it is.
var errHandler = errors.New("eventlog: read handler")

type handlerError struct{ err error }

func (h *handlerError) Error() string   { return h.err.Error() }
func (h *handlerError) Is(t error) bool { return t == errHandler }

// directBatch asks stream for up to n messages on subject from sequence
// seq on (a batched direct get, answered by any replica), hands each to
// handle as it arrives, and returns how many it handled and how many more
// there are. No handle call runs after it returns.
func directBatch(ctx context.Context, nc *nats.Conn, stream, subject string, seq uint64, n int, handle func(*nats.Msg) error) (int, uint64, error) {
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
	inbox := nc.NewRespInbox()
	sub, err := nc.Subscribe(inbox, func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		switch status := m.Header.Get("Status"); status {
		case "":
			if err := handle(m); err != nil {
				fail = &handlerError{err: err}
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
	if err := nc.PublishRequest("$JS.API.DIRECT.GET."+stream, inbox, req); err != nil {
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
