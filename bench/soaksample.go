package bench

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/apprun/apprun/embednats"
	"github.com/apprun/apprun/eventlog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The soak's samples, per node: what a leak would make grow.
const (
	qRSS   = "RSS"
	qFDs   = "open descriptors"
	qGo    = "goroutines"
	qLog   = "log on disk"
	qLag   = "read-model lag"
	qHeap  = "Go heap in use"
	qFile  = "RSS of mapped files"
	mebi   = 1 << 20
	noLag  = -1.0
	noHead = ^uint64(0)
)

var soakQuantities = []struct{ name, unit string }{
	{qRSS, "MiB"}, {qFile, "MiB"}, {qHeap, "MiB"}, {qFDs, ""}, {qGo, ""}, {qLog, "MiB"}, {qLag, "events"},
}

// soakSampler samples every node that is up: its resident memory, the
// part of it that is mapped files' pages (the read models' file grows with
// the log) and open descriptors (from /proc), its goroutines and Go heap
// in use
// (/metrics: what of the RSS is the Go heap's, and what the store's
// caches and mapped files), the size of
// its embedded server's store (the log, and the little else it keeps),
// and how far its read models are behind the log's head: the stream's
// last sequence, read through the cluster's client ports, minus the
// sequence /metrics says the node applied.
type soakSampler struct {
	nodes  *soakNodes
	nc     *nats.Conn
	js     jetstream.JetStream
	t0     time.Time
	series map[string]*Series // by quantity and node
	order  []*Series
}

func newSoakSampler(c *cluster, nodes *soakNodes, t0 time.Time) (*soakSampler, error) {
	urls := make([]string, len(c.nats))
	for i, a := range c.nats {
		urls[i] = "nats://" + a
	}
	nc, err := nats.Connect(strings.Join(urls, ","), nats.UserInfo(embednats.User, c.secret),
		nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("connect to the cluster's log: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	s := &soakSampler{nodes: nodes, nc: nc, js: js, t0: t0, series: map[string]*Series{}}
	for _, q := range soakQuantities { // the plot's panels and lines in this order
		for i := range clusterNodes {
			se := &Series{Name: q.name, Unit: q.unit, Node: nodeName(i)}
			s.series[q.name+"/"+se.Node] = se
			s.order = append(s.order, se)
		}
	}
	return s, nil
}

func (s *soakSampler) close() { s.nc.Close() }

// run samples every interval until ctx ends.
func (s *soakSampler) run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		s.sample(ctx, min(3*time.Second, every))
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// sample takes one sample of every node that is up, each node and the
// log's head read at once, none for longer than within: while the
// cluster elects a leader after a kill, the log may not say its head for
// seconds, and the other nodes are sampled meanwhile.
func (s *soakSampler) sample(ctx context.Context, within time.Duration) {
	t := time.Since(s.t0).Seconds()
	vals, oks, head := s.read(ctx, within)
	for i := range clusterNodes {
		if !oks[i] || !s.nodes.up[i].Load() { // killed meanwhile: not a sample of it
			continue
		}
		v, name := vals[i], nodeName(i)
		s.series[qRSS+"/"+name].add(t, v.rss/mebi)
		s.series[qHeap+"/"+name].add(t, v.heap/mebi)
		s.series[qFile+"/"+name].add(t, v.rssFile/mebi)
		s.series[qFDs+"/"+name].add(t, v.fds)
		s.series[qGo+"/"+name].add(t, v.goroutines)
		s.series[qLog+"/"+name].add(t, v.logBytes/mebi)
		if l := v.lag(head); l != noLag {
			s.series[qLag+"/"+name].add(t, l)
		}
	}
}

// read reads every node that is up, and the log's head, at once.
func (s *soakSampler) read(ctx context.Context, within time.Duration) ([clusterNodes]nodeValues, [clusterNodes]bool, uint64) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var vals [clusterNodes]nodeValues
	var oks [clusterNodes]bool
	head := noHead
	var wg sync.WaitGroup
	wg.Go(func() { head = s.head(ctx) })
	for i := range clusterNodes {
		if s.nodes.up[i].Load() {
			srv := s.nodes.cur[i].Load()
			wg.Go(func() { vals[i], oks[i] = nodeSample(ctx, srv) })
		}
	}
	wg.Wait()
	return vals, oks, head
}

// head is the log's last sequence, noHead when the log does not say.
func (s *soakSampler) head(ctx context.Context) uint64 {
	st, err := s.js.Stream(ctx, eventlog.StreamName)
	if err != nil {
		return noHead
	}
	return st.CachedInfo().State.LastSeq
}

// lags is each node's read-model lag now (noLag for a node down or
// unanswering).
func (s *soakSampler) lags(ctx context.Context) []float64 {
	vals, oks, head := s.read(ctx, 3*time.Second)
	out := make([]float64, clusterNodes)
	for i := range out {
		out[i] = noLag
		if oks[i] {
			out[i] = vals[i].lag(head)
		}
	}
	return out
}

// nodeValues is one sample of one node; applied is the sequence its read
// models applied, -1 when /metrics did not say.
type nodeValues struct {
	rss, rssFile, heap, fds, goroutines, logBytes, applied float64
}

// lag is how far the node's read models are behind head (noLag when
// either is unknown). Head and applied are read at once: a node that
// applied past the head read is not behind.
func (v nodeValues) lag(head uint64) float64 {
	if head == noHead || v.applied < 0 {
		return noLag
	}
	return max(0, float64(head)-v.applied)
}

// nodeSample samples srv.
func nodeSample(ctx context.Context, srv *Server) (nodeValues, bool) {
	var v nodeValues
	rss, files, err := srv.Memory()
	if err != nil {
		return v, false
	}
	fds, err := srv.FDs()
	if err != nil {
		return v, false
	}
	m, err := srv.metrics(ctx)
	if err != nil {
		return v, false
	}
	v.rss, v.rssFile, v.fds, v.goroutines = float64(rss), float64(files), float64(fds), m["go_goroutines"]
	v.heap = m["go_memstats_heap_inuse_bytes"]
	v.logBytes = float64(dirSize(filepath.Join(srv.dir, "data", "nats")))
	v.applied = -1
	if applied, ok := m["apprun_read_models_applied_seq"]; ok {
		v.applied = applied
	}
	return v, true
}

// dirSize is the bytes of the files under dir (what it can read of a
// store being written to meanwhile).
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
