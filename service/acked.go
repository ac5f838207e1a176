package service

// Acknowledged is the highest log sequence of a write this node answered
// before its read models applied it (a run's admission, on every
// surface). The surfaces' reads wait until the read models have applied
// it (projections.Current), so a client still reads its own writes, and
// the wait is paid by a read that needs it rather than by every create. A
// read that waits for it includes every such write answered before the
// read began.
func (s *Service) Acknowledged() uint64 { return s.acked.Load() }
