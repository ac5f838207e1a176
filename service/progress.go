package service

import (
	"context"
	"errors"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service/store"
)

// A run's progress events are written as the App reports its steps. One
// failed write used to fail the whole attempt: the App ran on with nothing
// written, was nacked at the end and executed again from step 1 (paying a
// model twice). A progress write now rides out a leader election or a
// lost answer: it is retried, with backoff, for as long as the run's
// deadline allows, and if it still cannot be written the run goes on
// without that event.

// errRunEnded: someone else ended the run (a cancel) while it ran.
var errRunEnded = errors.New("service: the run was ended by someone else meanwhile")

// progressBackoff bounds the wait between two tries of a progress write.
const (
	progressBackoffFirst = 50 * time.Millisecond
	progressBackoffMax   = 2 * time.Second
)

// writeProgress appends a progress event. It returns errRunEnded when the
// run was ended meanwhile, errRunMoved when another executor writes it,
// ctx's error when the deadline came first, and nil once the event is in
// the log (written now, or by a try whose answer was lost).
func (w *runWriter) writeProgress(ctx context.Context, ev engine.RunEvent) error {
	ev.At = w.svc.now() // fixed across tries: it recognises a try that landed
	wait := progressBackoffFirst
	for {
		err := w.write(ctx, ev)
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, port.ErrConflict), store.IsAmbiguous(err):
			// Someone wrote the run (a cancel), or this write's answer was
			// lost: learn where the run stands.
			landed, foreign, rerr := w.catchUp(ctx, ev)
			switch {
			case rerr != nil:
			case w.run.Terminal():
				return errRunEnded
			case foreign:
				return errRunMoved // another executor runs it: leave it that one
			case landed:
				return nil
			}
		case !errors.Is(err, port.ErrUnavailable):
			return err
		}
		w.svc.cfg.Sleep(wait) // the simulation's clock, in a simulation
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wait = min(2*wait, progressBackoffMax)
	}
}

// catchUp applies the run's events after the writer's last one and says
// whether ev is among them, and whether any other is (another writer's).
func (w *runWriter) catchUp(ctx context.Context, ev engine.RunEvent) (landed, foreign bool, err error) {
	events, err := w.svc.log.RunLog(ctx, w.run.RunNo, w.last)
	if err != nil {
		return false, false, err
	}
	for _, le := range events {
		if le.Event.Type == ev.Type && le.Event.At.Equal(ev.At) && sameStep(stepOf(le.Event), stepOf(ev)) {
			landed = true
		} else {
			foreign = true
		}
		w.run = engine.ApplyRun(w.run, le.Event, le.Seq)
		w.last = le.Seq
	}
	return landed, foreign, nil
}

// stepOf is ev's step, nil for an event of another kind.
func stepOf(ev engine.RunEvent) *engine.Step {
	if ev.ToolRun == nil {
		return nil
	}
	return ev.ToolRun.Step
}

func sameStep(a, b *engine.Step) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}
