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
//
// When the node can tell whether a majority of the cluster is reachable
// (Config.QuorumReachable: an embedded member can), it tells an election
// from a loss of quorum: without a majority the log is down at the first
// probe without a leader; with one, requests wait for the election for up
// to electionDownAfter probes. A leader killed outright takes the other
// members 4 to 10 s to replace.
const (
	probeEvery        = 500 * time.Millisecond
	probeWait         = time.Second
	downAfter         = 4  // consecutive probes without a leader: 2 s
	electionDownAfter = 40 // the same with a majority reachable: 20 s
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
		if l.storeLost() {
			continue
		}
		if l.leaderKnown() {
			fails = 0
			l.down.Store(false)
			continue
		}
		fails++
		l.down.Store(downAt(fails, l.quorum))
	}
}

// downAt says whether the log is down after fails probes in a row found
// no leader, given what the node knows of its quorum (nil: nothing).
func downAt(fails int, quorum func() bool) bool {
	switch {
	case quorum == nil:
		return fails >= downAfter
	case !quorum():
		return true
	default:
		return fails >= electionDownAfter
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

// storeLost reports whether the server's store has failed a write it
// keeps refusing (embednats.Server.StoreFailed: a disk that filled under
// the stream). The log is then down for good: every request fails at once
// and /readyz says so, where each write would otherwise wait out its
// timeout. Only a restart of the server clears it, once the disk has
// space again.
func (l *Log) storeLost() bool {
	if l.storeFailed == nil {
		return false
	}
	why := l.storeFailed()
	if why == "" {
		return false
	}
	if !l.down.Swap(true) {
		l.logger.Error("the event log's store failed a write and takes no more until the node restarts: "+
			"this node answers 503; make room on its disk, then restart it", "nats", why)
	}
	return true
}
