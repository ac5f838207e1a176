package eventlog

import (
	"context"
	"time"
)

// The log's writability is probed in the background, so that while it is
// lost (a cluster without a quorum: no stream leader) requests fail at
// once with ErrUnavailable instead of each waiting out its timeout, and
// /readyz can say so. A leader election is shorter than downAfter probes:
// during one, requests still try (and wait, bounded, for the new leader).
const (
	probeEvery = 500 * time.Millisecond
	probeWait  = time.Second
	downAfter  = 4 // consecutive probes without a leader: 2 s
)

// probe runs until the connection is closed.
func (l *Log) probe() {
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	fails := 0
	for range t.C {
		if l.nc.IsClosed() {
			return
		}
		if l.leaderKnown() {
			fails = 0
			l.down.Store(false)
			continue
		}
		if fails++; fails >= downAfter {
			l.down.Store(true)
		}
	}
}

// leaderKnown asks the stream for its leader (a stream that is not
// replicated has no cluster information and is its own leader).
func (l *Log) leaderKnown() bool {
	if !l.nc.IsConnected() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeWait)
	defer cancel()
	info, err := l.stream.Info(ctx)
	if err != nil {
		return false
	}
	return info.Cluster == nil || info.Cluster.Leader != ""
}
