package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/apprun/apprun/apps"
	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/eventlog"
	"github.com/apprun/apprun/inputschema"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service"
	"github.com/nats-io/nats.go"
)

// createScenario measures POST /api/v1/runs at a fixed concurrency over
// many accounts, then, with the same concurrency and durability, the bare
// JetStream writes one create makes (probe.go), and reports the ratio.
// The runs are test-sleep runs that sleep through the phase, so the
// executor adds no writes of its own while creates are measured.
func createScenario(ctx context.Context, cfg Config, s *Scenario) error {
	srv, err := server(ctx, cfg)
	if err != nil {
		return err
	}
	defer srv.Stop()
	keys, err := srv.accounts(ctx, cfg.Accounts, 1_000_000_000)
	if err != nil {
		return err
	}
	// On its own server the runs sleep through the phase, so the executor
	// adds no writes while creates are measured. A running server (--url)
	// is shared with the other scenarios and may lack the test App: there
	// the runs are cold-email-writer runs, executed meanwhile.
	body := sleepRun(600_000, 0)
	if cfg.URL != "" {
		body = coldEmailRun()
		s.note("--url: cold-email-writer runs, executed during the phase (their writes are in the create figure, not in the bare one)")
	}
	var n atomic.Int64
	create := func(ctx context.Context, _ int) error {
		_, err := srv.create(ctx, keys[n.Add(1)%int64(len(keys))], body)
		return err
	}
	res := loadServer(ctx, cfg, srv, "create", cfg.CreateConcurrency, create)
	s.loadErrors("create", res)
	srv.Stop()

	bare, err := bareWrites(ctx, cfg)
	if err != nil {
		return fmt.Errorf("bare writes: %w", err)
	}
	s.loadErrors("bare writes", bare)
	if res.ops == 0 || bare.ops == 0 {
		return fmt.Errorf("nothing measured: %d creates, %d bare writes", res.ops, bare.ops)
	}
	s.atLeast("creates", res.perSecond(), "/s", 1000)
	s.latency("create", res.lat.summary())
	s.atMost("create p99 (target)", ms(res.lat.summary().P99), "ms", 50)
	s.add("bare JetStream writes of one create", bare.perSecond(), "/s")
	s.latency("bare writes", bare.lat.summary())
	s.add("create ÷ bare writes", res.perSecond()/bare.perSecond(), "ratio")
	s.note("concurrency %d, %d accounts, %s per phase, SyncAlways on both; bare writes = the create-window publish + the atomic batch (charge CAS, slot CAS, job with price check, created CAS) made by the bench's probe (engine.AdmissionWrites) in this process on its own embedded JetStream",
		cfg.CreateConcurrency, cfg.Accounts, cfg.Duration)
	return nil
}

// bareWrites runs engine probes on a fresh embedded JetStream configured
// as a shipped node (SyncAlways, the same streams and limits as the bench
// server) at the create concurrency.
func bareWrites(ctx context.Context, cfg Config) (res loadResult, err error) {
	err = onBareNode(ctx, []engine.App{apps.TestSleep()}, func(e *service.Service, ports port.Set) (err error) {
		res, err = probeLoad(ctx, cfg, e, ports)
		return err
	})
	return res, err
}

// onBareNode runs fn on an engine with list's Apps over a fresh embedded
// JetStream in a temporary directory, configured as a shipped node
// (SyncAlways, the same streams and limits as the bench server), with
// nothing running: the bench's probes write to it directly.
func onBareNode(ctx context.Context, list []engine.App, fn func(*service.Service, port.Set) error) error {
	dir, err := os.MkdirTemp("", "apprun-bench-bare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	return withNATS(filepath.Join(dir, "nats"), false, func(nc *nats.Conn) error {
		e, ports, err := preparedEngine(ctx, nc, bareLimits, 1, list...)
		if err != nil {
			return err
		}
		return fn(e, ports)
	})
}

// bareLimits are the bench server's limits (high) for the bare writes.
var bareLimits = engine.Limits{CreatePerMinute: 100_000_000, ReadsPerMinute: 100_000_000,
	OwnerActiveRuns: 1_000_000, PlatformActiveRuns: 1_000_000}

// probeLoad runs a probe per create client, each on accounts of its own,
// for a second to warm up and then for the phase.
func probeLoad(ctx context.Context, cfg Config, e *service.Service, ports port.Set) (loadResult, error) {
	probes := make([]*probe, cfg.CreateConcurrency)
	for i := range probes {
		var err error
		if probes[i], err = newProbe(ctx, e, ports, apps.TestSleepSlug, 1_000_000_000, 1+i*1_000_000); err != nil {
			return loadResult{}, err
		}
	}
	admit := func(ctx context.Context, w int) error { return probes[w].admit(ctx) }
	load(ctx, cfg.CreateConcurrency, time.Second, admit)
	return load(ctx, cfg.CreateConcurrency, cfg.Duration, admit), nil
}

// preparedEngine is an engine on nc with its streams (of replicas) and
// prices written, and nothing running, with its ports: enough to write to
// the log directly.
func preparedEngine(ctx context.Context, nc *nats.Conn, lim engine.Limits, replicas int, list ...engine.App) (*service.Service, port.Set, error) {
	catalog, err := engine.NewCatalog(inputschema.Compile, list...)
	if err != nil {
		return nil, port.Set{}, err
	}
	st, err := eventlog.Open(ctx, nc, eventlog.Config{Limits: lim, Replicas: replicas})
	if err != nil {
		return nil, port.Set{}, err
	}
	ports := st.Ports()
	e, err := service.New(ports, service.Config{Catalog: catalog, Reads: noReads{}, Limits: lim})
	if err != nil {
		return nil, port.Set{}, err
	}
	return e, ports, e.Prepare(ctx)
}

// noReads stands in for the read models a probe never consults.
type noReads struct{}

func (noReads) BrandContext(context.Context, string) (engine.BrandContext, error) {
	return engine.BrandContext{}, port.ErrNotFound
}

func (noReads) FinishedBefore(time.Time, int) ([]engine.FinishedRun, error) { return nil, nil }
