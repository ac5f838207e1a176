package service

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/port"
)

// liveBuffer is how many events a follower may fall behind before it is
// disconnected (it resumes with Last-Event-ID).
const liveBuffer = 32

// hub fans the republished run events of this node's one core subscription
// out to the followers of each run. It never blocks on a follower.
type hub struct {
	logger *slog.Logger
	mu     sync.Mutex
	subs   map[string]map[*liveSub]struct{}
	unsub  func()
}

type liveSub struct {
	ch     chan liveMsg
	closed bool
}

// liveMsg is one republished event: its sequence, the previous sequence on
// the same run subject (for gap detection) and the event as streamed,
// decoded and encoded once for every follower.
type liveMsg struct {
	seq, prev uint64
	ev        *liveEvent // shared by every follower: 24 bytes a buffered message
}

// liveEvent is a live event ready to send: streamed is false for events a
// stream does not show (created); err is a payload that did not decode.
type liveEvent struct {
	StreamEvent
	streamed bool
	err      error
}

func newHub(logger *slog.Logger) *hub {
	return &hub{logger: logger, subs: map[string]map[*liveSub]struct{}{}}
}

func (h *hub) start(live port.Live) error {
	unsub, err := live.FollowRuns(h.dispatch)
	if err != nil {
		return err
	}
	h.unsub = unsub
	return nil
}

func (h *hub) stop() {
	if h.unsub != nil {
		h.unsub()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, set := range h.subs {
		for s := range set {
			s.close()
		}
	}
	h.subs = map[string]map[*liveSub]struct{}{}
}

func (h *hub) dispatch(m port.LiveRunMsg) {
	runNo, seq, prev := m.RunNo, m.Seq, m.Prev
	h.mu.Lock()
	following := len(h.subs[runNo]) > 0
	h.mu.Unlock()
	if !following {
		return
	}
	// Decoded and encoded outside the lock: followers come and go meanwhile
	// (one that arrives now also replays this event; its sequence dedupes).
	lm := liveMsg{seq: seq, prev: prev, ev: &liveEvent{}}
	if e, err := engine.DecodeRunEvent(m.Data); err != nil {
		lm.ev.err = fmt.Errorf("engine: decode live event %d: %w", seq, err)
	} else {
		lm.ev.StreamEvent, lm.ev.streamed = streamed(seq, e)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs[runNo] {
		select {
		case s.ch <- lm:
		default: // too slow: disconnect, it will resume
			s.close()
			delete(h.subs[runNo], s)
		}
	}
}

// onEnd calls fn when a terminal event of the run arrives live, until the
// returned stop is called.
func (e *Service) onEnd(runNo string, fn func()) (stop func()) {
	if e.hub == nil { // not started: driven directly (the simulation)
		return func() {}
	}
	s := e.hub.add(runNo)
	go func() {
		for m := range s.ch {
			if m.ev.streamed && m.ev.Terminal {
				fn()
			}
		}
	}()
	return func() { e.hub.remove(runNo, s) }
}

func (h *hub) add(runNo string) *liveSub {
	s := &liveSub{ch: make(chan liveMsg, liveBuffer)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs[runNo] == nil {
		h.subs[runNo] = map[*liveSub]struct{}{}
	}
	h.subs[runNo][s] = struct{}{}
	return s
}

func (h *hub) remove(runNo string, s *liveSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if set := h.subs[runNo]; set != nil {
		delete(set, s)
		if len(set) == 0 {
			delete(h.subs, runNo)
		}
	}
	s.close()
}

func (s *liveSub) close() {
	if !s.closed {
		s.closed = true
		close(s.ch)
	}
}

// StreamEvent is one event as the event stream sends it: Data is the
// encoded JSON of its public data, shared by every follower of the run.
type StreamEvent struct {
	Seq      uint64
	Type     engine.RunEventType
	Data     json.RawMessage
	Terminal bool
}

// Follower follows one run's log from a sequence on: it replays what is
// stored, then what arrives live, with no gap and no duplicate.
type Follower struct {
	e     *Service
	runNo string
	last  uint64
	sub   *liveSub
}

// Follow registers for a run's live events first (so nothing falls between
// replay and live), then lets the caller replay with Catchup.
func (e *Service) Follow(runNo string, after uint64) *Follower {
	return &Follower{e: e, runNo: runNo, last: after, sub: e.hub.add(runNo)}
}

// Live delivers raw live events; it is closed when the follower fell too
// far behind or the node is stopping.
func (f *Follower) Live() <-chan liveMsg { return f.sub.ch }

// Last is the sequence of the last event the follower has seen.
func (f *Follower) Last() uint64 { return f.last }

// Close unregisters the follower.
func (f *Follower) Close() { f.e.hub.remove(f.runNo, f.sub) }

// Catchup returns the stored events after the last one delivered.
func (f *Follower) Catchup(ctx context.Context) ([]StreamEvent, error) {
	if out, ok := f.e.finished.after(f.runNo, f.last); ok {
		if len(out) > 0 {
			f.last = out[len(out)-1].Seq
		}
		return out, nil
	}
	var out []StreamEvent
	base, last := f.last, f.last
	err := f.e.log.eachRunEvent(ctx, f.runNo, f.last, func(le loggedEvent) error {
		last = le.Seq
		if ev, ok := streamed(le.Seq, le.Event); ok {
			out = append(out, ev)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	f.last = last
	f.e.finished.keep(f.runNo, base, out) // when the run is finished (replaycache.go)
	return out, nil
}

// Receive turns a live event into the events to send: none for a duplicate,
// a catch-up from the log when something was missed in between.
func (f *Follower) Receive(ctx context.Context, m liveMsg) ([]StreamEvent, error) {
	if m.seq <= f.last {
		return nil, nil
	}
	if m.prev != f.last {
		return f.Catchup(ctx)
	}
	if m.ev.err != nil {
		return nil, m.ev.err
	}
	f.last = m.seq
	if m.ev.streamed {
		return []StreamEvent{m.ev.StreamEvent}, nil
	}
	return nil, nil
}

func streamed(seq uint64, e engine.RunEvent) (StreamEvent, bool) {
	if e.Type == engine.RunCreated || e.Type == engine.RunFenced {
		return StreamEvent{}, false
	}
	data, err := json.Marshal(e.PublicData())
	if err != nil { // only an output that is not JSON, which the log never holds
		data = []byte(`{}`)
	}
	return StreamEvent{Seq: seq, Type: e.Type, Data: data, Terminal: e.Type.Terminal()}, true
}
