package projections

import "time"

// commitEvery is the least time between two of the applier's commits
// while events keep coming. Each commit fsyncs the bbolt file twice, on
// the disk the log's own fsyncs wait for: under a stream of creates the
// applier committed about once a millisecond, and spacing its commits
// raised creates/s by 20–45 % (BENCHMARKS.md, "Issue 21, second pass"). An
// event that arrives after a quiet spell is committed at once, and so is
// everything that has come when a reader waits (WaitFor): the delay is
// paid only under load, by no one waiting for it, and is at most this
// long.
const commitEvery = 5 * time.Millisecond

// gather collects one transaction's events: first, then, until wait has
// passed or wake says a reader waits, those that arrive (a wait of zero or
// less waits for none), then those already queued, up to max in all. It
// returns nil when done closes while it waits.
func gather(in <-chan event, done, wake <-chan struct{}, first event, wait time.Duration, max int) []event {
	batch := []event{first}
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		for len(batch) < max {
			select {
			case m := <-in:
				batch = append(batch, m)
				continue
			case <-t.C:
			case <-wake:
			case <-done:
				return nil
			}
			break
		}
	}
	for len(batch) < max {
		select {
		case m := <-in:
			batch = append(batch, m)
		default:
			return batch
		}
	}
	return batch
}
