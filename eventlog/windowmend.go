package eventlog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The rate-limit windows, kept in place.
//
// With one replica the windows are memory streams (windowStorage): an
// external nats-server that restarts comes back without them, while the
// event log and the durable consumers, kept on its disk, come back whole.
// Every limited request counts in a window, so a node that made them only
// at start answered 503 to every API call ("rate limit: nats: no response
// from stream") until it was restarted itself, while /readyz, which asked
// only the event log, said 200 and no orchestrator replaced it. So a
// window found missing is made again: after each reconnection to NATS
// (watch, within a probe), and when a count finds its stream gone (Hit,
// which then counts once more). Until it is, Unavailable says why, and
// /readyz answers 503. A window holds a minute of counts: made again
// empty, a key may make one more minute's worth of requests, once.
//
// A window that is there but does not answer is in a leader election
// (on a cluster, its leader's server killed): the windows are then
// called unavailable only after as long as the log would be (downAt),
// not at the first look, or every node of a cluster would leave the
// load balancer together for each election of a window.
//
// Only the windows are made again. The event log's stream is on disk and
// never made again empty: probe.go reports it missing.

const (
	// mendWait bounds one mend: a look at each window, and making again
	// those missing.
	mendWait = 10 * time.Second
	// mendEvery: a mend that failed is not tried again for this long;
	// meanwhile counts fail at once with its reason.
	mendEvery = time.Second
)

// errWindowsUnchecked: connected again, and the windows not looked for yet.
var errWindowsUnchecked = errors.New("the rate-limit windows are being looked for after a reconnection to NATS " +
	"(a server that restarts loses them; they are made again)")

// mends is where the windows stand.
type mends struct {
	// checked is the connection's reconnection count when the windows
	// were last found in place.
	checked atomic.Uint64
	// broken is why mends fail, since when; nil after one succeeded.
	broken atomic.Pointer[breakage]

	mu sync.Mutex
	// flight is the mend under way: whoever needs one meanwhile waits
	// for it.
	flight *mendFlight
	// failed and failedAt: the last mend's failure, and when.
	failed   error
	failedAt time.Time
}

type mendFlight struct {
	done chan struct{}
	err  error
	// sure: a window is missing and could not be made again, as opposed
	// to not answering.
	sure bool
}

// breakage is why the windows cannot count, since when.
type breakage struct {
	err   error
	since time.Time
	sure  bool
}

// missing says whether a publish found no window stream to take it
// (nobody answers on its subject).
func missing(err error) bool {
	return errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, jetstream.ErrStreamNotFound)
}

// mend makes again the windows that are missing, one mend at a time: a
// caller that finds one under way waits for its outcome (for as long as
// its ctx allows), and one within mendEvery of a failed mend gets that
// failure at once. A burst of requests after a restart makes one mend.
func (w *windows) mend(ctx context.Context) error {
	m := &w.mends
	m.mu.Lock()
	f := m.flight
	if f == nil {
		if time.Since(m.failedAt) < mendEvery {
			err := m.failed
			m.mu.Unlock()
			return err
		}
		f = &mendFlight{done: make(chan struct{})}
		m.flight = f
		go w.mendNow(f) // on its own context: one caller giving up ends it for no one
	}
	m.mu.Unlock()
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// mendNow runs one mend and records its outcome.
func (w *windows) mendNow(f *mendFlight) {
	// Read before looking: a reconnection during the look is looked
	// after again.
	seen := w.nc.Stats().Reconnects
	ctx, cancel := context.WithTimeout(context.Background(), mendWait)
	f.sure, f.err = w.makeMissing(ctx)
	cancel()
	m := &w.mends
	m.mu.Lock()
	m.flight = nil
	was := m.broken.Load()
	if f.err != nil {
		m.failed, m.failedAt = f.err, time.Now()
		b := &breakage{err: f.err, since: m.failedAt, sure: f.sure}
		if was != nil {
			b.since = was.since
		}
		m.broken.Store(b)
	} else {
		m.failed, m.failedAt = nil, time.Time{}
		was = m.broken.Swap(nil)
		m.checked.Store(seen)
	}
	m.mu.Unlock()
	close(f.done)
	switch { // once a breakage, not at every mend
	case f.err != nil && was == nil:
		w.cfg.Logger.Error("eventlog: the rate-limit windows cannot count; limited requests answer 503 until they are "+
			"made again (tried every second)", "err", f.err)
	case f.err == nil && was != nil:
		w.cfg.Logger.Info("eventlog: the rate-limit windows count again")
	}
}

// makeMissing looks for each window and makes again those missing; sure
// says a window is missing and could not be made, not that it does not
// answer. A look is bounded as a probe is: a window without a leader (an
// election) fails the mend within a second, and the requests waiting for
// it with it.
func (w *windows) makeMissing(ctx context.Context) (sure bool, err error) {
	for _, sc := range w.configs {
		lctx, cancel := context.WithTimeout(ctx, probeWait)
		_, err := w.js.Stream(lctx, sc.Name)
		cancel()
		if err == nil {
			continue
		}
		if !errors.Is(err, jetstream.ErrStreamNotFound) {
			return false, fmt.Errorf("the rate-limit window %s does not answer (NATS restarting, or an election?): %w", sc.Name, err)
		}
		if w.mends.broken.Load() == nil { // else said already
			w.cfg.Logger.Warn("eventlog: a rate-limit window was missing on NATS (a server restarted?); making it again", "stream", sc.Name)
		}
		if _, err := ensureWindow(ctx, w.js, w.cfg, sc); err != nil {
			return true, fmt.Errorf("the rate-limit window %s is missing on NATS and could not be made again: %w", sc.Name, err)
		}
	}
	return false, nil
}

// watch looks for the windows after each reconnection to NATS, and every
// probe while they are broken, until the connection is closed.
func (w *windows) watch() {
	if len(w.configs) == 0 {
		return
	}
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	for range t.C {
		if w.nc.IsClosed() {
			return
		}
		if !w.nc.IsConnected() || w.mends.broken.Load() == nil && w.mends.checked.Load() == w.nc.Stats().Reconnects {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), mendWait)
		_ = w.mend(ctx) // its outcome is Unavailable's
		cancel()
	}
}

// Unavailable is why the windows cannot count now: one is missing and
// cannot be made again, or they have not answered for as long as the log
// may not (downAt), or the node connected again and has not looked for
// them yet. Without a connection, the log says so.
func (w *windows) Unavailable() error {
	if len(w.configs) == 0 {
		return nil
	}
	if b := w.mends.broken.Load(); b != nil && (b.sure || downAt(int(time.Since(b.since)/probeEvery), w.cfg.QuorumReachable)) {
		return b.err
	}
	if w.nc.IsConnected() && w.nc.Stats().Reconnects != w.mends.checked.Load() {
		return errWindowsUnchecked
	}
	return nil
}
