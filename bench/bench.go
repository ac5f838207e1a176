package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Config says which server to drive and how hard.
type Config struct {
	// Binary is the apprun binary the bench starts servers from.
	Binary string
	// URL and AdminToken name a running server to drive instead; the
	// scenarios that need a server of their own (stream memory, the
	// substrate baselines) still start one.
	URL, AdminToken string
	// Duration of each throughput phase (default 10s).
	Duration time.Duration
	// CreateConcurrency (32), Accounts (64): the create scenario.
	CreateConcurrency, Accounts int
	// ReadConcurrency (64): the read scenario.
	ReadConcurrency int
	// Streams (10,000) held open over StreamRuns (20) ticking runs.
	Streams, StreamRuns int
	// ClusterStreams (50,000) held open on a 3-node cluster over
	// ClusterStreamRuns (60) runs ticking every ClusterStreamTick (1s):
	// the cluster-stream scenario. The nodes execute 96 runs at once at
	// most (32 workers each). No stream is started after
	// ClusterStreamOpenWithin (150s): the scenario stays bounded in time
	// on a cluster that cannot take them all.
	ClusterStreams, ClusterStreamRuns          int
	ClusterStreamTick, ClusterStreamOpenWithin time.Duration
	// ReplayEvents (1,000,000) to rebuild; ResumeEvents (1,000) and
	// ResumeLongEvents (100,000; -1 for none) to resume.
	ReplayEvents, ResumeEvents, ResumeLongEvents int
	// Runs (200) timed end to end.
	Runs int
	// SoakDuration is the soak's whole length (default: Duration when it
	// is given, else 3m); SoakKills how many node kills it spreads over
	// that length (default 6: one every 5 min in 30).
	SoakDuration time.Duration
	SoakKills    int
	// Plot, when set, is the file the soak draws its samples to (SVG).
	Plot string
	// Command is the command line, quoted in the report.
	Command string
	// ServerProfiles, when set, is a directory that receives a CPU
	// profile of the server through each measured phase (<scenario>.prof).
	ServerProfiles string
	// Log receives progress lines.
	Log io.Writer
}

func (c *Config) defaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	if c.SoakDuration <= 0 {
		// Duration is a phase of the others but the soak's whole length:
		// left unset, a short soak, not a 10-second one.
		c.SoakDuration = 3 * time.Minute
		if c.Duration > 0 {
			c.SoakDuration = c.Duration
		}
	}
	if c.Duration <= 0 {
		c.Duration = 10 * time.Second
	}
	def(&c.SoakKills, 6)
	def(&c.CreateConcurrency, 32)
	def(&c.Accounts, 64)
	def(&c.ReadConcurrency, 64)
	def(&c.Streams, 10_000)
	def(&c.StreamRuns, 20)
	def(&c.ClusterStreams, 50_000)
	def(&c.ClusterStreamRuns, 60)
	if c.ClusterStreamTick <= 0 {
		c.ClusterStreamTick = time.Second
	}
	if c.ClusterStreamOpenWithin <= 0 {
		c.ClusterStreamOpenWithin = 150 * time.Second
	}
	def(&c.ReplayEvents, 1_000_000)
	def(&c.ResumeEvents, 1_000)
	if c.ResumeLongEvents == 0 {
		c.ResumeLongEvents = 100_000
	}
	def(&c.Runs, 200)
	if c.Log == nil {
		c.Log = io.Discard
	}
}

// Scenarios are the scenario names in the order they run.
var Scenarios = []string{"create", "read", "stream", "replay", "run", "cluster", "cluster-stream"}

// Named are the scenarios that run only when named: the soak is long.
var Named = []string{"soak"}

// Run runs the named scenarios (every one of Scenarios when none; those
// of Named only when named) and reports every figure.
func Run(ctx context.Context, cfg Config, names ...string) *Report {
	cfg.defaults()
	if len(names) == 0 {
		names = Scenarios
	}
	r := NewReport(cfg.Command)
	for _, name := range names {
		fn := map[string]func(context.Context, Config, *Scenario) error{
			"create": createScenario, "read": readScenario, "stream": streamScenario,
			"replay": replayScenario, "run": runScenario, "cluster": clusterScenario,
			"soak":           soakScenario,
			"cluster-stream": clusterStreamScenario,
		}[name]
		s := &Scenario{Name: name, Command: cfg.Command}
		if fn == nil {
			s.Err = fmt.Sprintf("unknown scenario %q (want one of %v)", name, append(slices.Clone(Scenarios), Named...))
		} else {
			fmt.Fprintf(cfg.Log, "bench: %s...\n", name)
			if err := fn(ctx, cfg, s); err != nil {
				s.Err = err.Error()
			}
		}
		r.Scenarios = append(r.Scenarios, s)
	}
	return r
}

// server is the server a scenario drives: the configured one, or a new
// child process. The caller stops it (a no-op for the configured one).
func server(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.URL != "" {
		return useServer(ctx, cfg.URL, cfg.AdminToken)
	}
	return startServer(ctx, cfg.Binary)
}

// serverAndKey is server with one account of a billion Credits, and its key.
func serverAndKey(ctx context.Context, cfg Config) (*Server, string, error) {
	srv, err := server(ctx, cfg)
	if err != nil {
		return nil, "", err
	}
	key, err := srv.account(ctx, 1_000_000_000)
	if err != nil {
		srv.Stop()
		return nil, "", err
	}
	return srv, key, nil
}

// loadResult is what a closed-loop load phase measured.
type loadResult struct {
	ops, errs int64
	elapsed   time.Duration
	lat       *latencies
	firstErr  error
}

func (l loadResult) perSecond() float64 { return float64(l.ops) / l.elapsed.Seconds() }

// load runs op in a closed loop on `workers` goroutines for d. An op in
// flight when d ends finishes and is not counted.
func load(ctx context.Context, workers int, d time.Duration, op func(ctx context.Context, worker int) error) loadResult {
	res := loadResult{lat: &latencies{}}
	var ops, errs atomic.Int64
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(d)
	for w := range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				t := time.Now()
				if t.After(end) {
					return
				}
				err := op(ctx, w)
				if time.Now().After(end) {
					return
				}
				if err != nil {
					errs.Add(1)
					once.Do(func() { res.firstErr = err })
					continue
				}
				res.lat.add(time.Since(t))
				ops.Add(1)
			}
		})
	}
	wg.Wait()
	res.elapsed, res.ops, res.errs = d, ops.Load(), errs.Load()
	return res
}

func (s *Scenario) loadErrors(what string, r loadResult) {
	if r.errs > 0 {
		s.note("%s: %d errors, first: %v", what, r.errs, r.firstErr)
	}
}
