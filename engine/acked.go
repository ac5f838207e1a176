package engine

import "sync/atomic"

// acknowledged is the highest log sequence of a write this node answered
// without waiting for its read models (a run's admission, on every
// surface). The surfaces' reads wait until the read models have applied
// it (projections.Current), so a client still reads its own writes, and
// the wait is paid by a read that needs it rather than by every create.
type acknowledged struct{ seq atomic.Uint64 }

func (a *acknowledged) note(seq uint64) {
	for {
		cur := a.seq.Load()
		if seq <= cur || a.seq.CompareAndSwap(cur, seq) {
			return
		}
	}
}

// Acknowledged is the highest log sequence of a write this node answered
// before its read models applied it. A read that waits for it includes
// every such write answered before the read began.
func (e *Engine) Acknowledged() uint64 { return e.acked.seq.Load() }
