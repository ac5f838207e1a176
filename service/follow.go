package service

import (
	"context"

	"github.com/apprun/apprun/service/live"
	"github.com/apprun/apprun/service/store"
)

// onEnd calls fn when a terminal event of the run arrives live, until the
// returned stop is called.
func (s *Service) onEnd(runNo string, fn func()) (stop func()) {
	if s.hub == nil { // not started: driven directly (the simulation)
		return func() {}
	}
	sub := s.hub.Add(runNo)
	go func() {
		for m := range sub.C {
			if m.Ev.Streamed && m.Ev.Terminal {
				fn()
			}
		}
	}()
	return func() { s.hub.Remove(runNo, sub) }
}

// Follower follows one run's log from a sequence on: it replays what is
// stored, then what arrives live, with no gap and no duplicate.
type Follower struct {
	svc   *Service
	runNo string
	last  uint64
	sub   *live.Sub
}

// Follow registers for a run's live events first (so nothing falls between
// replay and live), then lets the caller replay with Catchup.
func (s *Service) Follow(runNo string, after uint64) *Follower {
	return &Follower{svc: s, runNo: runNo, last: after, sub: s.hub.Add(runNo)}
}

// Live delivers raw live events; it is closed when the follower fell too
// far behind or the node is stopping.
func (f *Follower) Live() <-chan live.Msg { return f.sub.C }

// Last is the sequence of the last event the follower has seen.
func (f *Follower) Last() uint64 { return f.last }

// Close unregisters the follower.
func (f *Follower) Close() { f.svc.hub.Remove(f.runNo, f.sub) }

// Catchup returns the stored events after the last one delivered.
func (f *Follower) Catchup(ctx context.Context) ([]live.StreamEvent, error) {
	if out, ok := f.svc.finished.After(f.runNo, f.last); ok {
		if len(out) > 0 {
			f.last = out[len(out)-1].Seq
		}
		return out, nil
	}
	var out []live.StreamEvent
	base, last := f.last, f.last
	err := f.svc.log.EachRunEvent(ctx, f.runNo, f.last, func(le store.LoggedEvent) error {
		last = le.Seq
		if ev, ok := live.ToStream(le.Seq, le.Event); ok {
			out = append(out, ev)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	f.last = last
	f.svc.finished.Keep(f.runNo, base, out) // when the run is finished (live.Finished)
	return out, nil
}

// Receive turns a live event into the events to send: none for a duplicate,
// a catch-up from the log when something was missed in between.
func (f *Follower) Receive(ctx context.Context, m live.Msg) ([]live.StreamEvent, error) {
	if m.Seq <= f.last {
		return nil, nil
	}
	if m.Prev != f.last {
		return f.Catchup(ctx)
	}
	if m.Ev.Err != nil {
		return nil, m.Ev.Err
	}
	f.last = m.Seq
	if m.Ev.Streamed {
		return []live.StreamEvent{m.Ev.StreamEvent}, nil
	}
	return nil, nil
}
