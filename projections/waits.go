package projections

import (
	"sync"
	"sync/atomic"
)

// waits are the sequences readers wait for (WaitFor). The applier commits
// as soon as its batch holds the lowest of them, and not before: a commit
// that stops short of every waited event only costs a transaction (a
// rebuild that a reader waited on committed about 98 events at a time
// instead of about 1,640: 152k–155k against 172k–180k events/s;
// BENCHMARKS.md, twelfth pass).
type waits struct {
	mu    sync.Mutex
	count map[uint64]int // waited sequence → readers waiting for it
	// lowest is the lowest waited sequence, 0 when no one waits; the
	// applier reads it without the lock.
	lowest atomic.Uint64
	// wake tells the applier a reader began to wait, in case what it waits
	// for is already in the batch being gathered.
	wake chan struct{}
}

func newWaits() *waits {
	return &waits{count: map[uint64]int{}, wake: make(chan struct{}, 1)}
}

// add records a reader waiting for seq (> 0).
func (w *waits) add(seq uint64) {
	w.mu.Lock()
	w.count[seq]++
	if low := w.lowest.Load(); low == 0 || seq < low {
		w.lowest.Store(seq)
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// remove records that a reader waiting for seq stopped waiting.
func (w *waits) remove(seq uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.count[seq]--; w.count[seq] > 0 {
		return
	}
	delete(w.count, seq)
	if seq != w.lowest.Load() {
		return
	}
	var low uint64
	for s := range w.count {
		if low == 0 || s < low {
			low = s
		}
	}
	w.lowest.Store(low)
}

// reached reports whether a batch that ends at seq holds an event a
// reader waits for.
func (w *waits) reached(seq uint64) bool {
	low := w.lowest.Load()
	return low != 0 && seq >= low
}
