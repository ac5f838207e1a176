package service

import (
	"context"
	"time"

	"github.com/apprun/apprun/service/live"
	"github.com/apprun/apprun/subjects"
)

// Watch is the one way a surface follows a run (the event stream, an MCP
// tool call waiting for its run). It hands send the run's events after
// `after`, in order, with no gap and no duplicate: first what is stored,
// then what arrives live. It ends when send has had the terminal event
// (nil), when send fails (its error), when ctx ends (ctx's error), or when
// the node stops (nil: the client resumes elsewhere).
//
// When the live feed drops the watcher (it fell too far behind), it
// catches up from the log and goes on. After `idle` without sending
// anything it calls quiet with the last sequence sent, and reads the log
// again when quiet asks: a safety net under the live feed, and the event
// stream's heartbeat. Not every `idle` whatever was sent: a run that
// ticks needs neither (a missed event shows as a gap at the next one),
// and the heartbeats of 50,000 streams were about a fifth of their nodes'
// CPU when each run ticked every 10 s (bench: cluster-stream).
func (s *Service) Watch(ctx context.Context, runNo string, after uint64, idle time.Duration,
	send func([]live.StreamEvent) (done bool, err error), quiet func(last uint64) (catchUp bool, err error)) error {
	f := s.Follow(runNo, after)
	defer func() { f.Close() }() // the follower in use at the end
	tick := time.NewTicker(idle)
	defer tick.Stop()
	evs, err := f.Catchup(ctx)
	for {
		if err != nil {
			return err
		}
		if done, err := send(evs); done || err != nil {
			return err
		}
		if len(evs) > 0 {
			tick.Reset(idle)
		}
		evs = nil
		select {
		case <-ctx.Done():
			return ctx.Err()
		case m, ok := <-f.Live():
			if !ok {
				select {
				case <-s.stopped:
					return nil
				default: // fell behind: read the log again
				}
				f.Close()
				f = s.Follow(runNo, f.Last())
				evs, err = f.Catchup(ctx)
				continue
			}
			evs, err = f.Receive(ctx, m)
		case <-tick.C:
			var again bool
			if again, err = quiet(f.Last()); again && err == nil {
				evs, err = f.Catchup(ctx)
			}
		}
	}
}

// RunLastSeq is the sequence of the newest message of a run's log, read
// from the log (not the read models, which may be behind it): no event
// of the run has an id past it yet.
func (s *Service) RunLastSeq(ctx context.Context, runNo string) (uint64, error) {
	m, err := s.ports.Log.Last(ctx, subjects.Run(runNo))
	if err != nil {
		return 0, internal("read the run's last event", err)
	}
	return m.Seq, nil
}
