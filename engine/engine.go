package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Limits are the rate and concurrency limits of spec §8. Zero disables one.
type Limits struct {
	CreatePerMinute    int // run creations per API key
	ReadsPerMinute     int // reads per API key
	OwnerActiveRuns    int // active runs per account
	PlatformActiveRuns int // active runs, all accounts
}

// Reads is what the engine reads from the read models (the projections
// implement it): brand contexts for runs, finished runs for retention.
type Reads interface {
	BrandContext(ctx context.Context, id string) (BrandContext, error)
	// FinishedBefore lists up to limit runs that ended before t, oldest first.
	FinishedBefore(t time.Time, limit int) ([]FinishedRun, error)
}

// ErrNotFound is the expected absence of a record in a read model.
var ErrNotFound = errors.New("not found")

// Config configures an Engine. Zero values get defaults in New.
type Config struct {
	Catalog *Catalog
	Limits  Limits
	Reads   Reads
	// Replicas of the streams (1 embedded, 3 on a cluster).
	Replicas int
	// Timeout bounds each JetStream request (default 5s).
	Timeout time.Duration
	// Workers bounds how many runs this node executes at once (default 32).
	Workers int
	// SweepEvery is how often expired runs are removed (default 1m).
	SweepEvery time.Duration
	// Standalone says no other node can share this log (embedded NATS
	// without a client port or cluster): the read limit is then counted
	// in memory, exactly, without a JetStream request per read.
	Standalone bool
	// Webhooks configures webhook deliveries.
	Webhooks WebhookConfig
	// Now is the clock (default time.Now); events carry its time.
	Now    func() time.Time
	Logger *slog.Logger
}

// Engine runs apprun's domain on a JetStream event log: admission of runs
// with their charge, execution, accounts, keys, prices and brand contexts.
type Engine struct {
	cfg Config
	nc  *nats.Conn
	log *eventLog
	// windows are the rate-limit streams, kept from start-up so a refusal
	// costs one read of the oldest counted request, not a stream lookup.
	windows map[string]jetstream.Stream
	hub     *hub
	exec    *executor
	sweep   *sweeper
	hooks   *dispatcher
	// counters feed Stats.
	counters counters
	// reads are the in-memory read windows of a standalone node (nil otherwise).
	reads *localWindows

	stopOnce sync.Once
}

// New validates cfg and prepares an Engine on the connection nc.
func New(nc *nats.Conn, cfg Config) (*Engine, error) {
	if nc == nil {
		return nil, errors.New("engine: nil NATS connection")
	}
	if cfg.Catalog == nil {
		return nil, errors.New("engine: Catalog is required")
	}
	if cfg.Reads == nil {
		return nil, errors.New("engine: Reads is required")
	}
	if cfg.SweepEvery <= 0 {
		cfg.SweepEvery = time.Minute
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = 1
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 32
	}
	if cfg.Webhooks.Backoff <= 0 {
		cfg.Webhooks.Backoff = 5 * time.Second
	}
	if cfg.Webhooks.Window <= 0 {
		cfg.Webhooks.Window = 24 * time.Hour
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("engine: jetstream: %w", err)
	}
	e := &Engine{cfg: cfg, nc: nc, log: newEventLog(nc, js, cfg.Timeout)}
	if cfg.Standalone && cfg.Limits.ReadsPerMinute > 0 {
		e.reads = newLocalWindows(cfg.Limits.ReadsPerMinute)
	}
	return e, nil
}

// Start creates the streams, writes the catalog's initial prices, and starts
// the live-event hub and the executor. It returns once all are running.
func (e *Engine) Start(ctx context.Context) error {
	if err := e.Prepare(ctx); err != nil {
		return err
	}
	e.hub = newHub(e.cfg.Logger)
	if err := e.hub.start(e.nc); err != nil {
		return fmt.Errorf("engine: live hub: %w", err)
	}
	e.exec = newExecutor(e)
	if err := e.exec.start(ctx); err != nil {
		e.hub.stop()
		return fmt.Errorf("engine: executor: %w", err)
	}
	hooks, err := startDispatcher(ctx, e)
	if err != nil {
		e.exec.stop()
		e.hub.stop()
		return fmt.Errorf("engine: webhooks: %w", err)
	}
	e.hooks = hooks
	e.sweep = startSweeper(e)
	return nil
}

// Prepare creates the streams and the catalog's prices, as Start does, but
// starts no executor, hub or sweeper: enough to write (engine.Probe).
func (e *Engine) Prepare(ctx context.Context) error {
	st, windows, err := e.waitForStreams(ctx)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	e.log.stream, e.windows = st, windows
	if err := e.seedPrices(ctx); err != nil {
		return fmt.Errorf("engine: seed prices: %w", err)
	}
	return nil
}

// waitForStreams creates the streams, retrying while JetStream is not
// ready yet (a cluster without a quorum, a server still starting).
func (e *Engine) waitForStreams(ctx context.Context) (jetstream.Stream, map[string]jetstream.Stream, error) {
	var st jetstream.Stream
	var windows map[string]jetstream.Stream
	err := Retry(ctx, e.cfg.Logger, "create streams", func(ctx context.Context) error {
		var err error
		st, windows, err = ensureStreams(ctx, e.log.js, e.cfg.Limits, e.cfg.Replicas)
		return err
	})
	return st, windows, err
}

// Stop stops the executor (runs in flight are abandoned to redelivery) and
// the hub. Safe twice and before Start.
func (e *Engine) Stop() {
	e.stopOnce.Do(func() {
		if e.sweep != nil {
			e.sweep.stop()
		}
		if e.exec != nil {
			e.exec.stop()
		}
		e.hooks.stop()
		if e.hub != nil {
			e.hub.stop()
		}
	})
}

// Catalog returns the Apps.
func (e *Engine) Catalog() *Catalog { return e.cfg.Catalog }

// Stream returns the JetStream stream of the event log, for the projections.
func (e *Engine) Stream() jetstream.Stream { return e.log.stream }

func (e *Engine) now() time.Time { return e.cfg.Now().UTC() }

// internal wraps an unexpected failure: logged by the caller's adapter and
// shown to clients only as internal_error.
func internal(op string, err error) error {
	return fmt.Errorf("engine: %s: %w", op, err)
}

// LogHead is the sequence of the newest message in the log: a node whose
// read models have reached it has seen every write made anywhere before.
func (e *Engine) LogHead(ctx context.Context) (uint64, error) {
	if !e.nc.IsConnected() {
		return 0, errUnavailable
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	info, err := e.log.stream.Info(ctx)
	if err != nil {
		return 0, internal("log head", err)
	}
	return info.State.LastSeq, nil
}

// RunSeq is the sequence of a run's newest event, or ErrNotFound: it lets
// a node whose read models lag wait for a run created on another node.
func (e *Engine) RunSeq(ctx context.Context, runNo string) (uint64, error) {
	var ev RunEvent
	seq, err := e.log.last(ctx, runSubject(runNo), &ev)
	if errors.Is(err, errNoMessage) {
		return 0, ErrNotFound
	}
	if err != nil {
		return 0, internal("read run", err)
	}
	return seq, nil
}
