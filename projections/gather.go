package projections

import "time"

// commitEvery is the least time between two of the applier's commits
// while events keep coming. Each commit fsyncs the bbolt file twice, on
// the disk the log's own fsyncs wait for: under a stream of creates the
// applier committed about once a millisecond, and spacing its commits
// raised creates/s by 20–45 % (BENCHMARKS.md, "Issue 21, second pass"). An
// event that arrives after a quiet spell is committed at once, and so is
// a batch that holds an event a reader waits for (WaitFor): the delay is
// paid only under load, by no one waiting for it, and is at most this
// long.
const commitEvery = 5 * time.Millisecond

// gather collects one transaction's events into buf (whose capacity is
// the most it takes): first, then, until wait has passed or the batch
// holds an event a reader waits for (waits), those that arrive (a wait of
// zero or less waits for none), then those already queued. It returns nil
// when done closes while it waits.
func gather(in <-chan event, done <-chan struct{}, waits *waits, first event, wait time.Duration, buf []event) []event {
	batch, max := append(buf[:0], first), cap(buf)
	if wait > 0 && !waits.reached(first.seq) {
		t := time.NewTimer(wait)
		defer t.Stop()
	gathering:
		for len(batch) < max {
			select {
			case m := <-in:
				batch = append(batch, m)
				if waits.reached(m.seq) {
					break gathering
				}
			case <-waits.wake:
				// A reader began to wait: commit now if its event is here.
				if waits.reached(batch[len(batch)-1].seq) {
					break gathering
				}
			case <-t.C:
				break gathering
			case <-done:
				return nil
			}
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
