package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// The cluster-stream scenario's targets (issue 50) and pace.
const (
	clusterStreamsWanted = 50_000
	clusterStreamRSS     = 16     // KiB of a node's resident memory a stream
	clusterStreamP99     = 100    // ms from an event's append to a client
	clusterStreamFDs     = 20_000 // descriptors a process may hold here
	// A client process opens at most clusterStreamInFlight streams at
	// once and clusterStreamOpenRate a second.
	clusterStreamOpenRate = 2_500
	clusterStreamInFlight = 64
)

// clusterStreamScenario holds cfg.ClusterStreams event streams on a
// 3-node cluster, spread over the nodes and over cfg.ClusterStreamRuns
// runs ticking every cfg.ClusterStreamTick, and measures each node's
// resident memory and descriptors per stream and how long an event takes
// from its append, on whichever node runs it, to a client of any node.
// The clients live in child processes (StreamClients): no process here
// may hold more than 20,000 descriptors, the bench included.
func clusterStreamScenario(ctx context.Context, cfg Config, s *Scenario) error {
	c, err := ownCluster(ctx, cfg, s)
	defer c.stop()
	if err != nil {
		return err
	}
	nodes := c.nodes
	key, runs, phase, err := tickingCluster(ctx, nodes, cfg.ClusterStreamRuns, cfg.ClusterStreamTick)
	if err != nil {
		return err
	}
	loads := make([]*nodeLoad, len(nodes))
	for i, n := range nodes {
		loads[i] = &nodeLoad{srv: n}
	}
	if err := sampleBefore(ctx, loads); err != nil {
		return err
	}
	slots := planClients(cfg.ClusterStreams, len(nodes), streamsPerProcess(), localPorts())
	procs, o, err := openClients(ctx, cfg, nodes, slots, key, runs, loads)
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	if err != nil {
		return err
	}
	time.Sleep(3 * time.Second) // every stream past its replay
	w, err := measureCluster(ctx, cfg, loads, procs)
	if err != nil {
		return err
	}
	clusterStreamFigures(s, cfg, o, w, loads)
	s.note("%d streams asked for on a 3-node cluster (child processes, one JetStream cluster over loopback routes, streams R3), spread evenly over the nodes and over %d test-sleep runs ticking every %s, created on the nodes in turn %s apart and executed wherever the work queue gave them (a run's ticks say which node ran it)",
		cfg.ClusterStreams, len(runs), cfg.ClusterStreamTick, phase)
	s.note("clients: %d child processes of the bench (`apprun bench stream-clients`), a bare HTTP/1.1 connection a stream read on one goroutine; each opens at most %d streams at once and %d a second, none after %s, and a stream counts as open once its replay's first event arrived; a cut stream resumes with Last-Event-ID after 3-4 s, as EventSource does; together %.0f MiB resident in the middle of the clientWindow, the busiest holding %d descriptors",
		len(slots), clusterStreamInFlight, clusterStreamOpenRate, cfg.ClusterStreamOpenWithin, float64(w.clientRSS)/(1<<20), w.clientFDs)
	s.note("delivery = client receipt minus the event's own time (set on the executing node just before its append; one machine, one clock), every delivery of an event appended in the %s clientWindow, exact percentiles over all client processes; RSS with the streams = the median of samples every 250 ms through that clientWindow, RSS before = the median of 8 before the streams, per stream = their difference over the streams the node counts (apprun_sse_clients) in the middle of the clientWindow, when descriptors and goroutines are read too",
		cfg.Duration)
	switch {
	case w.events == 0:
		return fmt.Errorf("no event was delivered while measuring")
	case w.failed > 0:
		return fmt.Errorf("%d streams were refused or ended for good; first: %s", w.failed, w.firstErr)
	}
	return nil
}

// tickingCluster opens an account on the cluster and n runs ticking every
// tick, created on the nodes in turn, and waits until every run executes
// (on whichever node took it).
func tickingCluster(ctx context.Context, nodes []*Server, n int, tick time.Duration) (key string, runs []string, phase time.Duration, err error) {
	if key, err = nodes[0].account(ctx, 1_000_000_000); err != nil {
		return "", nil, 0, err
	}
	for _, node := range nodes { // every node's read models know the key
		if err := awaitKey(ctx, node, key); err != nil {
			return "", nil, 0, err
		}
	}
	steps := int(time.Duration(tickMS) * time.Millisecond / tick)
	runs, phase, err = tickingRuns(n, tick, func(i int) (string, error) {
		return nodes[i%len(nodes)].create(ctx, key, sleepRun(tickMS, steps))
	})
	if err != nil {
		return "", nil, 0, err
	}
	return key, runs, phase, awaitRunning(ctx, nodes[0], key, runs)
}

// awaitRunning waits until every run is running: a run still queued (every
// worker busy) would not tick.
func awaitRunning(ctx context.Context, srv *Server, key string, runs []string) error {
	deadline := time.Now().Add(60 * time.Second)
	for _, runNo := range runs {
		for {
			st, body, err := srv.do(ctx, "GET", "/api/v1/runs/"+runNo, key, nil)
			var run struct{ Status string }
			if err == nil && st == 200 && json.Unmarshal(body, &run) == nil && run.Status == "running" {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("run %s not running within 60s (%d runs at once are more than the nodes' workers?): %d %s %v",
					runNo, len(runs), st, body, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// opening is what the client processes said once they had opened their
// streams, summed.
type opening struct {
	took                  time.Duration
	started, opened, cuts int
	failed                int
	firstErr, firstCutErr string
}

// openClients starts one client process a slot and waits until each has
// opened its streams, or given up on the rest.
func openClients(ctx context.Context, cfg Config, nodes []*Server, slots []clientSlot, key string, runs []string,
	loads []*nodeLoad) (procs []*clientProc, o opening, err error) {
	start := time.Now()
	// The opening, profiled when asked: 10 s of it on every node, from
	// its 30th second (streams open by then, more opening).
	profiled := time.AfterFunc(30*time.Second, func() {
		for i, n := range nodes {
			profileServer(ctx, cfg, n, fmt.Sprintf("cluster-stream-open-node%d", i+1), 10*time.Second)
		}
	})
	defer profiled.Stop()
	for _, sl := range slots {
		job := clientJob{Host: hostOf(nodes[sl.node]), Key: key, Node: nodes[sl.node].Name, Runs: runs,
			First: sl.first, Streams: sl.count, InFlight: clusterStreamInFlight, Rate: clusterStreamOpenRate,
			OpenWithin: cfg.ClusterStreamOpenWithin, Source: sl.source}
		p, err := startClients(cfg.Binary, job, cfg.Log)
		if err != nil {
			return procs, o, err
		}
		procs = append(procs, p)
		loads[sl.node].streams += sl.count
	}
	for _, p := range procs {
		var r clientOpened
		if err := p.read(ctx, cfg.ClusterStreamOpenWithin+time.Minute, &r); err != nil {
			return procs, o, err
		}
		o.started += r.Started
		o.opened += r.Opened
		o.failed += r.Failed
		o.cuts += r.Cuts
		o.firstErr = cmp.Or(o.firstErr, r.FirstErr)
		o.firstCutErr = cmp.Or(o.firstCutErr, r.FirstCut)
	}
	o.took = time.Since(start)
	fmt.Fprintf(cfg.Log, "bench: cluster-stream: %d of %d streams open in %s\n", o.opened, cfg.ClusterStreams, o.took.Round(time.Millisecond))
	return procs, o, nil
}

func hostOf(s *Server) string { return s.URL[len("http://"):] }

// median sorts v and returns its middle value and its largest.
func medianPeak(v []int64) (mid, peak int64) {
	if len(v) == 0 {
		return 0, 0
	}
	slices.Sort(v)
	return v[len(v)/2], v[len(v)-1]
}

// clusterStreamFigures reports what the scenario measured: the streams
// and their delivery over all clients, then each node's share.
func clusterStreamFigures(s *Scenario, cfg Config, o opening, w clientWindow, loads []*nodeLoad) {
	s.atLeast("streams held open", float64(w.held), "streams", clusterStreamsWanted)
	s.add("streams opened", float64(o.opened), "streams")
	s.add("time to open them", o.took.Seconds(), "s")
	s.add("streams cut while opening (resumed)", float64(o.cuts), "cuts")
	s.add("streams cut while measured (resumed)", float64(w.cuts), "cuts")
	s.add("events delivered while measured", float64(w.events), "events")
	s.add("deliveries a second", float64(w.events)/cfg.Duration.Seconds(), "/s")
	if w.events > 0 {
		s.add("  of them from a run on another node", 100*float64(w.remote)/float64(w.events), "%")
	}
	s.add("nodes' CPU while measured", w.nodeCPU.Seconds()/cfg.Duration.Seconds(), "cores")
	s.add("client processes' CPU while measured", w.clientCPU.Seconds()/cfg.Duration.Seconds(), "cores")
	if w.events > 0 {
		s.add("nodes' CPU a delivery", float64(w.nodeCPU.Microseconds())/float64(w.events), "µs")
	}
	s.add("delivery p50", ms(w.lat.P50), "ms")
	s.add("delivery p90", ms(w.lat.P90), "ms")
	s.atMost("delivery p99", ms(w.lat.P99), "ms", clusterStreamP99)
	s.add("delivery max", ms(w.lat.Max), "ms")
	for i, l := range loads {
		name := fmt.Sprintf("node %d ", i+1)
		after, peak := medianPeak(l.rss)
		n := l.m1["apprun_sse_clients"]
		if n <= 0 {
			n = float64(l.streams)
		}
		s.add(name+"streams (its own count)", l.m1["apprun_sse_clients"], "streams")
		s.add(name+"RSS before", float64(l.before)/(1<<20), "MiB")
		s.add(name+"RSS with the streams", float64(after)/(1<<20), "MiB")
		s.atMost(name+"RSS per stream", float64(after-l.before)/n/1024, "KiB", clusterStreamRSS)
		s.below(name+"descriptors", float64(l.fds1), "", clusterStreamFDs)
		s.add(name+"goroutines per stream", (l.m1["go_goroutines"]-l.m0["go_goroutines"])/n, "")
		s.note("node %d (%s): %d streams given, RSS peak %.1f MiB, %d descriptors before the streams, heap in use %.2f KiB and stacks %.2f KiB a stream",
			i+1, l.srv.Name, l.streams, float64(peak)/(1<<20), l.fds0,
			(l.m1["go_memstats_heap_inuse_bytes"]-l.m0["go_memstats_heap_inuse_bytes"])/n/1024,
			(l.m1["go_memstats_stack_inuse_bytes"]-l.m0["go_memstats_stack_inuse_bytes"])/n/1024)
	}
	if o.cuts+w.cuts > 0 {
		s.note("the first cut: %s", cmp.Or(o.firstCutErr, w.firstCutErr))
	}
}
