package engine

import "sync/atomic"

// HighWater is the highest log sequence noted in it, safe for concurrent
// use: a floor that reads wait for.
type HighWater struct{ seq atomic.Uint64 }

// Note raises the mark to seq (a lower seq leaves it).
func (h *HighWater) Note(seq uint64) {
	for {
		cur := h.seq.Load()
		if seq <= cur || h.seq.CompareAndSwap(cur, seq) {
			return
		}
	}
}

// Load is the mark.
func (h *HighWater) Load() uint64 { return h.seq.Load() }

// Acknowledged is the highest log sequence of a write this node answered
// before its read models applied it (a run's admission, on every
// surface). The surfaces' reads wait until the read models have applied
// it (projections.Current), so a client still reads its own writes, and
// the wait is paid by a read that needs it rather than by every create. A
// read that waits for it includes every such write answered before the
// read began.
func (e *Engine) Acknowledged() uint64 { return e.acked.Load() }
