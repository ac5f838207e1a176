package bench

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/apprun/apprun/apps"
	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/eventlog"
	"github.com/apprun/apprun/inputschema"
	"github.com/apprun/apprun/ledger"
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

	bare, unsigned, err := bareWrites(ctx, cfg)
	if err != nil {
		return fmt.Errorf("bare writes: %w", err)
	}
	s.loadErrors("bare writes", bare)
	s.loadErrors("bare writes, unsigned", unsigned)
	if res.ops == 0 || bare.ops == 0 {
		return fmt.Errorf("nothing measured: %d creates, %d bare writes", res.ops, bare.ops)
	}
	s.atLeast("creates", res.perSecond(), "/s", 1000)
	s.latency("create", res.lat.summary())
	s.atMost("create p99 (target)", ms(res.lat.summary().P99), "ms", 50)
	s.add("bare JetStream writes of one create", bare.perSecond(), "/s")
	s.latency("bare writes", bare.lat.summary())
	s.add("create ÷ bare writes", res.perSecond()/bare.perSecond(), "ratio")
	if unsigned.ops > 0 {
		s.add("bare writes of one create, unsigned ledger", unsigned.perSecond(), "/s")
		s.latency("bare writes, unsigned", unsigned.lat.summary())
		s.add("signed ÷ unsigned bare writes", bare.perSecond()/unsigned.perSecond(), "ratio")
	}
	s.note("concurrency %d, %d accounts, %s per phase (the bare writes: signed and unsigned in 6 alternating slices each), SyncAlways on both; bare writes = the create-window publish + the atomic batch (charge CAS, slot CAS, job with price check, created CAS) made by the bench's probe (engine.AdmissionWrites) in this process on its own embedded JetStream, the charge signed as a node signs it; unsigned: the same writes with the charge unsigned, as before the ledger was signed (the server always signs)",
		cfg.CreateConcurrency, cfg.Accounts, cfg.Duration)
	return nil
}

// bareWrites runs engine probes at the create concurrency on two fresh
// embedded JetStreams configured as a shipped node (SyncAlways, the same
// streams and limits as the bench server): on one the charges are signed
// as a node signs them, on the other unsigned, as before the ledger was
// signed. The two are loaded in alternating slices (alternate), so the
// cost of signing is measured apart from the shared host's drift.
func bareWrites(ctx context.Context, cfg Config) (signed, unsigned loadResult, err error) {
	list := []engine.App{apps.TestSleep()}
	err = onBareNode(ctx, list, true, func(es *service.Service, ps port.Set) error {
		return onBareNode(ctx, list, false, func(eu *service.Service, pu port.Set) error {
			a, err := probeOp(ctx, cfg, es, ps)
			if err != nil {
				return err
			}
			b, err := probeOp(ctx, cfg, eu, pu)
			if err != nil {
				return err
			}
			w := cfg.CreateConcurrency
			load(ctx, w, time.Second, a)
			load(ctx, w, time.Second, b)
			const rounds = 6
			slice := cfg.Duration / rounds
			signed, unsigned = loadResult{lat: &latencies{}}, loadResult{lat: &latencies{}}
			alternate(rounds, func() { signed.merge(load(ctx, w, slice, a)) }, func() { unsigned.merge(load(ctx, w, slice, b)) })
			return nil
		})
	})
	return signed, unsigned, err
}

// onBareNode runs fn on an engine with list's Apps over a fresh embedded
// JetStream in a temporary directory, configured as a shipped node
// (SyncAlways, the same streams and limits as the bench server), with
// nothing running: the bench's probes write to it directly.
func onBareNode(ctx context.Context, list []engine.App, signed bool, fn func(*service.Service, port.Set) error) error {
	dir, err := os.MkdirTemp("", "apprun-bench-bare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	return withNATS(filepath.Join(dir, "nats"), false, func(nc *nats.Conn) error {
		e, ports, err := preparedEngine(ctx, nc, bareLimits, 1, signed, list...)
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
	admit, err := probeOp(ctx, cfg, e, ports)
	if err != nil {
		return loadResult{}, err
	}
	load(ctx, cfg.CreateConcurrency, time.Second, admit)
	return load(ctx, cfg.CreateConcurrency, cfg.Duration, admit), nil
}

// probeOp makes a probe per create client, each on accounts of its own,
// and the load operation that has client w's admit once.
func probeOp(ctx context.Context, cfg Config, e *service.Service, ports port.Set) (func(context.Context, int) error, error) {
	probes := make([]*probe, cfg.CreateConcurrency)
	for i := range probes {
		var err error
		if probes[i], err = newProbe(ctx, e, ports, apps.TestSleepSlug, 1_000_000_000, 1+i*1_000_000); err != nil {
			return nil, err
		}
	}
	return func(ctx context.Context, w int) error { return probes[w].admit(ctx) }, nil
}

// preparedEngine is an engine on nc with its streams (of replicas) and
// prices written, and nothing running, with its ports: enough to write to
// the log directly.
//
// With signed, it signs account events as a node does, with a key of its
// own (ledger/chain.go); without, it writes them unsigned, as apprun did
// before the ledger was signed: the bench's measure of what signing costs.
func preparedEngine(ctx context.Context, nc *nats.Conn, lim engine.Limits, replicas int, signed bool, list ...engine.App) (*service.Service, port.Set, error) {
	catalog, err := engine.NewCatalog(inputschema.Compile, list...)
	if err != nil {
		return nil, port.Set{}, err
	}
	var signer *ledger.Signer
	if signed {
		if signer, err = newSigner(); err != nil {
			return nil, port.Set{}, err
		}
	}
	st, err := eventlog.Open(ctx, nc, eventlog.Config{Limits: lim, Replicas: replicas})
	if err != nil {
		return nil, port.Set{}, err
	}
	ports := st.Ports()
	e, err := service.New(ports, service.Config{Catalog: catalog, Reads: noReads{}, Limits: lim, Signer: signer})
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

// newSigner is a ledger signer with a new key, as a node's.
func newSigner() (*ledger.Signer, error) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	return ledger.NewSigner(key)
}
