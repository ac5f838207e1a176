package bench

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"time"
)

// nodeLoad is what the cluster-stream scenario reads of one node.
type nodeLoad struct {
	srv     *Server
	streams int // its clients' streams
	// before: resident memory before the streams (the median of samples);
	// rss: samples through the measured clientWindow.
	before int64
	rss    []int64
	// m0, m1: its /metrics before the streams and in the middle of the
	// clientWindow; fds0, fds1: its open descriptors then.
	m0, m1     map[string]float64
	fds0, fds1 int
}

// sampleBefore reads every node before the streams: resident memory
// every 250 ms for 2 s (the runs settle meanwhile), then its metrics and
// descriptors.
func sampleBefore(ctx context.Context, loads []*nodeLoad) error {
	samples := make([][]int64, len(loads))
	for range 8 {
		time.Sleep(250 * time.Millisecond)
		for i, l := range loads {
			v, err := l.srv.RSS()
			if err != nil {
				return err
			}
			samples[i] = append(samples[i], v)
		}
	}
	for i, l := range loads {
		l.before, _ = medianPeak(samples[i])
		var err error
		if l.m0, err = l.srv.metrics(ctx); err != nil {
			return err
		}
		if l.fds0, err = l.srv.FDs(); err != nil {
			return err
		}
	}
	return nil
}

// clientWindow is what the clients measured through the clientWindow, merged.
type clientWindow struct {
	held, failed, cuts    int
	firstErr, firstCutErr string
	events, remote        int
	lat                   summary
	// nodeCPU, clientCPU: the CPU the nodes and the client processes used
	// through the clientWindow, in all.
	nodeCPU, clientCPU time.Duration
	clientRSS          int64 // every client process's, in the middle of the clientWindow
	clientFDs          int   // the most one client process held
	clientsMeasured    bool
}

// measureCluster measures for cfg.Duration: the clients count deliveries
// of the events appended from now on; each node's resident memory is
// sampled every 250 ms (it moves with the garbage collector's cycle: the
// figure is the median), its metrics and descriptors read in the middle,
// and, when asked, each node profiled through the clientWindow and the first
// node's heap taken in the middle.
func measureCluster(ctx context.Context, cfg Config, loads []*nodeLoad, procs []*clientProc) (clientWindow, error) {
	var w clientWindow
	cpu0 := cpuOf(loads, procs)
	since := time.Now()
	for _, p := range procs {
		if err := p.send("measure " + strconv.FormatInt(since.UnixNano(), 10)); err != nil {
			return w, err
		}
	}
	var profiled []func()
	defer func() {
		for _, wait := range profiled {
			wait()
		}
	}()
	for i, l := range loads {
		profiled = append(profiled, profileServer(ctx, cfg, l.srv, fmt.Sprintf("cluster-stream-node%d", i+1), cfg.Duration-time.Second))
	}
	middle := since.Add(cfg.Duration / 2)
	for end := since.Add(cfg.Duration); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		if !w.clientsMeasured && time.Now().After(middle) {
			if err := sampleMiddle(ctx, cfg, loads, procs, &w); err != nil {
				return w, err
			}
		}
		for _, l := range loads {
			v, err := l.srv.RSS()
			if err != nil {
				return w, err
			}
			l.rss = append(l.rss, v)
		}
	}
	cpu1 := cpuOf(loads, procs)
	for i := range cpu1 {
		if i < len(loads) {
			w.nodeCPU += cpu1[i] - cpu0[i]
		} else {
			w.clientCPU += cpu1[i] - cpu0[i]
		}
	}
	for _, p := range procs {
		if err := p.send("report"); err != nil {
			return w, err
		}
	}
	lat := &latencies{}
	for _, p := range procs {
		var r clientReport
		if err := p.read(ctx, time.Minute, &r); err != nil {
			return w, err
		}
		w.held += r.Open
		w.failed += r.Failed
		w.cuts += r.Cuts
		w.events += r.Events
		w.remote += r.Remote
		w.firstErr = cmp.Or(w.firstErr, r.FirstErr)
		w.firstCutErr = cmp.Or(w.firstCutErr, r.FirstCut)
		for _, us := range r.Micros {
			lat.d = append(lat.d, time.Duration(us)*time.Microsecond)
		}
	}
	w.lat = lat.summary()
	return w, nil
}

// sampleMiddle reads the nodes' metrics and descriptors and the client
// processes' memory and descriptors in the middle of the clientWindow.
func sampleMiddle(ctx context.Context, cfg Config, loads []*nodeLoad, procs []*clientProc, w *clientWindow) error {
	w.clientsMeasured = true
	for i, l := range loads {
		var err error
		if l.m1, err = l.srv.metrics(ctx); err != nil {
			return err
		}
		if l.fds1, err = l.srv.FDs(); err != nil {
			return err
		}
		if i == 0 {
			heapProfile(ctx, cfg, l.srv, "cluster-stream-node1-heap")
		}
	}
	for _, p := range procs {
		rss, err := rssOf(p.pid())
		if err != nil {
			return err
		}
		fds, err := fdsOf(p.pid())
		if err != nil {
			return err
		}
		w.clientRSS += rss
		w.clientFDs = max(w.clientFDs, fds)
	}
	return nil
}

// cpuOf reads the CPU time the nodes, then the client processes, have
// used so far.
func cpuOf(loads []*nodeLoad, procs []*clientProc) []time.Duration {
	var out []time.Duration
	for _, l := range loads {
		out = append(out, max(0, l.srv.processCPU()))
	}
	for _, p := range procs {
		d, _ := procCPU(p.pid())
		out = append(out, d)
	}
	return out
}
