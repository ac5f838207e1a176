package service

import (
	"sync/atomic"
)

// Stats count what this node has written since it started: the numbers
// behind the operator's metrics (the log stays the truth; these reset on
// restart, as counters do).
type Stats struct {
	EventsAppended  uint64 // messages stored in the event log
	Charges         uint64 // runs charged at admission
	Settles         uint64 // charges consumed by a completed run
	Refunds         uint64 // charges returned for a failed run
	CreditsCharged  uint64
	CreditsRefunded uint64
	// WorkersBusy is how many of this node's Workers are executing a run
	// now (a gauge): a worker is given back when its run's work has
	// stopped, so a canceled run that keeps one is seen here.
	WorkersBusy, Workers int
}

type counters struct {
	charges, settles, refunds, charged, refunded atomic.Uint64
}

// Stats returns this node's counters.
func (s *Service) Stats() Stats {
	c := &s.counters
	return Stats{EventsAppended: s.log.Appended(), Charges: c.charges.Load(), Settles: c.settles.Load(),
		Refunds: c.refunds.Load(), CreditsCharged: c.charged.Load(), CreditsRefunded: c.refunded.Load(),
		WorkersBusy: s.exec.busy(), Workers: s.cfg.Workers}
}

// ended counts a run's settle (completed) or refund (failed) of cost.
func (c *counters) ended(completed bool, cost int64) {
	if completed {
		c.settles.Add(1)
		return
	}
	c.refunds.Add(1)
	c.refunded.Add(uint64(cost))
}
