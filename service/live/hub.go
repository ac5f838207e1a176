// Package live is the service's live fan-out: one subscription a node to
// the republished run events (port.Live), fanned out to the followers of
// each run through bounded buffers, each event decoded and encoded once
// for all of them; and the replay cache of finished runs' stream events
// (replaycache.go), which serves a resume from memory. It never blocks on
// a follower: one too slow is disconnected and resumes with its last
// sequence.
package live

import (
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

// Hub fans the republished run events of this node's one core subscription
// out to the followers of each run. It never blocks on a follower.
type Hub struct {
	logger *slog.Logger
	mu     sync.Mutex
	subs   map[string]map[*Sub]struct{}
	unsub  func()
}

type Sub struct {
	C      chan Msg
	closed bool
}

// Msg is one republished event: its sequence, the previous sequence on
// the same run subject (for gap detection) and the event as streamed,
// decoded and encoded once for every follower.
type Msg struct {
	Seq, Prev uint64
	Ev        *Decoded // shared by every follower: 24 bytes a buffered message
}

// Decoded is a live event ready to send: streamed is false for events a
// stream does not show (created); err is a payload that did not decode.
type Decoded struct {
	StreamEvent
	Streamed bool
	Err      error
}

func NewHub(logger *slog.Logger) *Hub {
	return &Hub{logger: logger, subs: map[string]map[*Sub]struct{}{}}
}

func (h *Hub) Start(live port.Live) error {
	unsub, err := live.FollowRuns(h.dispatch)
	if err != nil {
		return err
	}
	h.unsub = unsub
	return nil
}

func (h *Hub) Stop() {
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
	h.subs = map[string]map[*Sub]struct{}{}
}

func (h *Hub) dispatch(m port.LiveRunMsg) {
	runNo, seq, prev := m.RunNo, m.Seq, m.Prev
	h.mu.Lock()
	following := len(h.subs[runNo]) > 0
	h.mu.Unlock()
	if !following {
		return
	}
	// Decoded and encoded outside the lock: followers come and go meanwhile
	// (one that arrives now also replays this event; its sequence dedupes).
	lm := Msg{Seq: seq, Prev: prev, Ev: &Decoded{}}
	if e, err := engine.DecodeRunEvent(m.Data); err != nil {
		lm.Ev.Err = fmt.Errorf("service: decode live event %d: %w", seq, err)
	} else {
		lm.Ev.StreamEvent, lm.Ev.Streamed = ToStream(seq, e)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs[runNo] {
		select {
		case s.C <- lm:
		default: // too slow: disconnect, it will resume
			s.close()
			delete(h.subs[runNo], s)
		}
	}
}

func (h *Hub) Add(runNo string) *Sub {
	s := &Sub{C: make(chan Msg, liveBuffer)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs[runNo] == nil {
		h.subs[runNo] = map[*Sub]struct{}{}
	}
	h.subs[runNo][s] = struct{}{}
	return s
}

func (h *Hub) Remove(runNo string, s *Sub) {
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

func (s *Sub) close() {
	if !s.closed {
		s.closed = true
		close(s.C)
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

func ToStream(seq uint64, e engine.RunEvent) (StreamEvent, bool) {
	if e.Type == engine.RunCreated || e.Type == engine.RunFenced || e.Type == engine.RunRecorded {
		return StreamEvent{}, false
	}
	data, err := json.Marshal(e.PublicData())
	if err != nil { // only an output that is not JSON, which the log never holds
		data = []byte(`{}`)
	}
	return StreamEvent{Seq: seq, Type: e.Type, Data: data, Terminal: e.Type.Terminal()}, true
}
