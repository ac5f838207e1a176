package port

import (
	"sync/atomic"
)

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
