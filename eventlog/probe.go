package eventlog

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
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

// Why the log is down: /readyz's reasons (Unavailable).
var (
	errNoConnection = errors.New("no connection to NATS")
	errReconnected  = errors.New("connected to NATS again; the event log's stream " + StreamName + " not probed yet")
	errNoLeader     = errors.New("the event log's stream " + StreamName + " has no leader (a cluster without a quorum?)")
	errNoAnswer     = errors.New("the event log's stream " + StreamName + " does not answer (NATS restarting, or a cluster without a quorum?)")
	// The stream is not made again: made empty, it would hide the loss of
	// every account, charge and run behind a node that looks ready.
	errLogMissing = errors.New("the event log's stream " + StreamName + " is missing on NATS (a server restarted without its store, " +
		"or the stream was deleted): the node does not make it again empty; restore NATS's store and it serves again")
	errStoreFailed = errors.New("the embedded server's store failed a write and takes no more until the node restarts " +
		"(a disk that filled?): see the node's log")
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
		err := l.leader()
		if err == nil {
			fails = 0
			l.down.Store(false)
			continue
		}
		if was := l.why.Swap(&err); err == errLogMissing && (was == nil || *was != errLogMissing) {
			l.logger.Error("eventlog: the event log's stream is missing on NATS; this node answers 503 and does not make it "+
				"again empty: restore NATS's store (see docs/deployment.md)", "stream", StreamName)
		}
		fails++
		l.down.Store(downAt(fails, l.quorum))
	}
}

// Unavailable is why the log cannot be reached now, or nil while it is
// Available.
func (l *Log) Unavailable() error {
	switch {
	case !l.nc.IsConnected():
		return errNoConnection
	case !l.down.Load():
		return nil
	}
	why := l.why.Load()
	switch {
	case why == nil:
		return errNoLeader
	case *why == errNoConnection: // the last probe's, before the reconnection
		return errReconnected
	}
	return *why
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

// leader asks the stream for its leader (a stream that is not
// replicated has no cluster information and is its own leader), and says
// why there is none.
func (l *Log) leader() error {
	if !l.nc.IsConnected() {
		return errNoConnection
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeWait)
	defer cancel()
	info, err := l.stream.Info(ctx)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return errLogMissing
	case err != nil:
		return errNoAnswer
	case info.Cluster != nil && info.Cluster.Leader == "":
		return errNoLeader
	}
	return nil
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
	l.why.Store(&errStoreFailed)
	if !l.down.Swap(true) {
		l.logger.Error("the event log's store failed a write and takes no more until the node restarts: "+
			"this node answers 503; make room on its disk, then restart it", "nats", why)
	}
	return true
}
