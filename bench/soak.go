package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/apprun/apprun/audit"
)

// drainWithin bounds the wait, after the load, for every run to be
// terminal: a run whose node was killed continues elsewhere after the
// executor's ack wait (10 s), from its start. streamGrace is how long
// after that a stream may take to show its run's end: a stream cut by a
// kill resumes within its backoff (2 s at most).
const (
	drainWithin = 3 * time.Minute
	streamGrace = 30 * time.Second
)

// soakScenario runs a 3-node cluster under a steady, modest mix of
// creates, reads, streams, cancels and failing runs for SoakDuration,
// kills one node (SIGKILL) every SoakDuration/SoakKills, round robin, and
// restarts it on its data directory, and samples every node meanwhile:
// what must stay flat (memory, descriptors, goroutines, the read models'
// lag) and what grows by design (the log). At the end every run must be
// over and the money exact, by the API and by `apprun audit`.
func soakScenario(ctx context.Context, cfg Config, s *Scenario) error {
	if cfg.URL != "" {
		s.note("run on a cluster of its own, not --url: it kills and restarts the nodes")
	}
	k := &soak{cfg: cfg, s: s, every: cfg.SoakDuration / time.Duration(cfg.SoakKills)}
	defer k.stop()
	if err := k.form(ctx); err != nil {
		return err
	}
	sctx, stopSampling := context.WithCancel(ctx)
	var sampling sync.WaitGroup
	sampling.Go(func() { k.sampler.run(sctx, sampleEvery(cfg.SoakDuration)) })
	defer func() { stopSampling(); sampling.Wait() }()

	var killing sync.WaitGroup
	killing.Go(func() { k.kill(ctx) })
	k.load = newSoakLoad(k.nodes, k.keys, k.t0.Add(cfg.SoakDuration), k.every/2)
	bgCtx, stopBackground := context.WithCancel(ctx)
	defer stopBackground()
	lctx, stopLoad := context.WithDeadline(ctx, k.t0.Add(cfg.SoakDuration))
	var profiling sync.WaitGroup
	profiling.Go(func() { k.heapProfiles(lctx) })
	k.load.run(lctx, bgCtx)
	stopLoad()
	profiling.Wait()
	k.mark(-1, "load stopped")
	killing.Wait() // the last node killed rejoins before the checks

	if err := k.drain(ctx, stopBackground); err != nil {
		stopSampling()
		sampling.Wait()
		return errors.Join(err, k.series())
	}
	k.lags = awaitLags(ctx, k.sampler)
	stopSampling()
	sampling.Wait()
	if err := k.check(ctx); err != nil {
		return errors.Join(err, k.series())
	}
	if err := k.report(); err != nil {
		return err
	}
	return k.killErr
}

// soak is one soak's cluster, clients and findings.
type soak struct {
	cfg     Config
	s       *Scenario
	every   time.Duration // between two kills
	c       *cluster
	keys    []string
	nodes   *soakNodes
	sampler *soakSampler
	load    *soakLoad
	t0      time.Time // the load's start: the series' time 0
	mu      sync.Mutex

	// What the kills did.
	killed, rejoined int
	killErr          error
	// What the end checks found.
	runs        [][]runState
	stuck       []string
	streamsOpen int64
	openStreams []string
	lags        []float64
	money       money
	audit       *audit.Summary
	auditErr    error
}

func (k *soak) logf(format string, args ...any) {
	fmt.Fprintf(k.cfg.Log, "bench: soak: "+format+"\n", args...)
}

// form starts the cluster, with a NATS client port on each node (the
// sampler and the audit read the log through them), opens the accounts
// and waits until every node knows them.
func (k *soak) form(ctx context.Context) error {
	began := time.Now()
	var err error
	if k.c, err = startCluster(ctx, k.cfg.Binary, true); err != nil {
		return err
	}
	if k.keys, err = k.c.nodes[0].accounts(ctx, soakAccounts, soakCredits); err != nil {
		return err
	}
	for _, n := range k.c.nodes {
		if err := awaitKey(ctx, n, k.keys[len(k.keys)-1]); err != nil {
			return err
		}
	}
	k.nodes = newSoakNodes(k.c)
	k.logf("cluster formed and accounts known to every node in %s", since(began))
	k.t0 = time.Now()
	k.sampler, err = newSoakSampler(k.c, k.nodes, k.t0)
	return err
}

func (k *soak) stop() {
	if k.sampler != nil {
		k.sampler.close()
	}
	if k.c != nil {
		k.c.stop()
	}
}

// mark notes a moment on the series' time axis (node -1: none's).
func (k *soak) mark(node int, what string) {
	m := Mark{T: time.Since(k.t0).Seconds(), What: what}
	if node >= 0 {
		m.Node = nodeName(node)
	}
	k.mu.Lock()
	k.s.Marks = append(k.s.Marks, m)
	k.mu.Unlock()
	k.logf("%s at %s", strings.TrimSpace(m.Node+" "+what), since(k.t0))
}

// kill kills the nodes in turn, the first half an interval in, so that
// the last leaves half an interval for its node to rejoin before the end.
func (k *soak) kill(ctx context.Context) {
	for n := range k.cfg.SoakKills {
		if pause(ctx, time.Until(k.t0.Add(k.every/2+time.Duration(n)*k.every))); ctx.Err() != nil {
			return
		}
		ok, err := k.nodes.killAndRestart(ctx, n%clusterNodes, k.down(), k.mark)
		k.killed++
		if ok {
			k.rejoined++
		}
		if err != nil {
			k.killErr = err
			return
		}
	}
}

// down is how long a killed node stays down: long enough for the others
// to see it gone.
func (k *soak) down() time.Duration { return min(5*time.Second, k.every/8) }

// drain waits, once the load has stopped, until every run is terminal,
// then until every stream has seen its run's end (streamGrace), and ends
// the streams left.
func (k *soak) drain(ctx context.Context, stopBackground func()) error {
	_, reader := k.nodes.pick(0)
	var err error
	if k.runs, k.stuck, err = awaitTerminal(ctx, reader, k.keys, drainWithin, k.logf); err != nil {
		return err
	}
	k.logf("runs terminal at %s (%d stuck)", since(k.t0), len(k.stuck))
	drained := make(chan struct{})
	go func() { k.load.bg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(streamGrace):
	}
	k.streamsOpen = k.load.open.Load()
	k.openStreams = k.load.stillFollowing(statuses(k.runs))
	stopBackground()
	<-drained
	k.logf("streams drained at %s (%d still open)", since(k.t0), k.streamsOpen)
	return nil
}

// check reads the money on a node, then audits the last node killed: its
// read models lived through the most.
func (k *soak) check(ctx context.Context) error {
	_, reader := k.nodes.pick(0)
	var err error
	if k.money, err = checkMoney(ctx, reader, k.keys, k.runs, soakCredits); err != nil {
		return err
	}
	audited := (k.cfg.SoakKills - 1 + clusterNodes) % clusterNodes
	k.logf("money read; audit of %s at %s", nodeName(audited), since(k.t0))
	var out string
	k.audit, out, k.auditErr = runAudit(ctx, k.cfg.Binary, k.c, audited)
	k.logf("audited at %s", since(k.t0))
	if k.auditErr != nil {
		k.logf("audit: %v\n%s", k.auditErr, out)
	}
	return nil
}

// awaitLags waits up to 30 s for every node's read models to reach the
// log's head once the load has stopped, and returns each one's lag.
func awaitLags(ctx context.Context, sampler *soakSampler) []float64 {
	deadline := time.Now().Add(30 * time.Second)
	for {
		lags := sampler.lags(ctx)
		caught := true
		for _, l := range lags {
			caught = caught && l == 0
		}
		if caught || time.Now().After(deadline) || ctx.Err() != nil {
			return lags
		}
		pause(ctx, 500*time.Millisecond)
	}
}

// sampleEvery is the soak's sampling interval: 360 samples over d, from
// one a second to one every 5 s.
func sampleEvery(d time.Duration) time.Duration {
	return min(5*time.Second, max(time.Second, d/360))
}

// statuses is each run's status, by run number.
func statuses(runs [][]runState) map[string]string {
	m := map[string]string{}
	for _, rs := range runs {
		for _, r := range rs {
			m[r.RunNo] = r.Status
		}
	}
	return m
}

// since is the time from t0, to the second, for the progress lines.
func since(t0 time.Time) time.Duration { return time.Since(t0).Round(time.Second) }

// heapProfiles writes each node's heap profile, when the bench was asked
// for server profiles, at the end of the soak's second fifth and just
// before its load ends: `go tool pprof -base` of the two says what of a
// node's heap grew between the two medians the RSS verdict compares.
func (k *soak) heapProfiles(ctx context.Context) {
	if k.cfg.ServerProfiles == "" {
		return
	}
	d := k.cfg.SoakDuration
	for _, at := range []struct {
		after time.Duration
		name  string
	}{{2 * d / 5, "2nd"}, {d - min(d/20, 30*time.Second), "end"}} {
		if pause(ctx, time.Until(k.t0.Add(at.after))); ctx.Err() != nil {
			return
		}
		for i := range clusterNodes {
			if k.nodes.up[i].Load() {
				heapProfile(ctx, k.cfg, k.nodes.cur[i].Load(), fmt.Sprintf("soak-%s-heap-%s", nodeName(i), at.name))
			}
		}
	}
}
