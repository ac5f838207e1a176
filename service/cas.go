package service

import (
	"iter"
	"time"
)

// maxCASRetries bounds compare-and-set retries under contention.
const maxCASRetries = 64

// casPauseAfter is how many tries a compare-and-set loop spends at once
// before it pauses between tries.
const casPauseAfter = 5

// casTries is the tries of a compare-and-set loop: the first casPauseAfter
// at once (a conflict with a local writer clears as soon as the log is read
// again), each later one after a short random pause. On a replicated stream
// a check fails for as long as another node's write on the subject is being
// replicated; tries spent back to back ran out under a CPU hog and answered
// "busy" to a request that a pause would have let through.
func (e *Service) casTries() iter.Seq[int] {
	return func(yield func(int) bool) {
		for attempt := range maxCASRetries {
			if attempt >= casPauseAfter {
				e.cfg.Sleep(e.backoff(attempt))
			}
			if !yield(attempt) {
				return
			}
		}
	}
}

// backoff is the pause before a later try: random, so that contenders
// spread out, and growing with the tries spent.
func (e *Service) backoff(attempt int) time.Duration {
	return time.Duration(e.cfg.IntN(attempt*200)+50) * time.Microsecond
}
