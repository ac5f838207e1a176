// Package eventlog implements the engine's ports (engine.Log, Queue, Live
// and Windows) on NATS JetStream. It owns the streams, the atomic batches,
// the direct gets, the durable consumers, the republished live events and
// the rate-limit window streams, and it turns every NATS error into one of
// the port's outcomes (engine.ErrConflict, ErrUnavailable, ErrAmbiguous,
// ErrNoMessage), so nothing above it matches a NATS error.
package eventlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/subjects"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Stream names.
const (
	StreamName     = "APPRUN"
	streamRLCreate = "APPRUN_RL_CREATE"
	streamRLRead   = "APPRUN_RL_READ"

	subjLive = "apprun.live." // republished run events, core NATS only
	subjRLC  = "apprun.rl.create."
	subjRLR  = "apprun.rl.read."
)

// Config configures the streams.
type Config struct {
	// Replicas of the streams (1 embedded, 3 on a cluster).
	Replicas int
	// QuorumReachable, when set, says whether this node reaches a majority
	// of the cluster (embednats.Server.QuorumReachable): the log then tells
	// a leader election, which requests wait for, from a loss of quorum,
	// which they fail fast on. Without it, 2 s without a leader is down.
	QuorumReachable func() bool
	// StoreFailed, when set, is "" while the server's store takes writes,
	// else why it takes none until the server restarts
	// (embednats.Server.StoreFailed): the log is then down (probe.go).
	StoreFailed func() string
	// Timeout bounds each JetStream request (default 5s).
	Timeout time.Duration
	// Limits size the rate-limit windows (CreatePerMinute and
	// ReadsPerMinute; zero turns one off): the engine's own, so the
	// windows and the quotas it reports cannot disagree.
	Limits engine.Limits
	Logger *slog.Logger
}

// Store is apprun's JetStream: the event log stream, the window streams,
// and the ports built on them.
type Store struct {
	cfg     Config
	nc      *nats.Conn
	js      jetstream.JetStream
	log     *Log
	windows *windows
}

// Open creates or updates the streams, retrying while JetStream is not
// ready yet (a cluster without a quorum, a server still starting).
func Open(ctx context.Context, nc *nats.Conn, cfg Config) (*Store, error) {
	if cfg.Replicas <= 0 {
		cfg.Replicas = 1
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("eventlog: jetstream: %w", err)
	}
	s := &Store{cfg: cfg, nc: nc, js: js}
	var st jetstream.Stream
	var reconnects uint64 // the connection's, when the windows were made
	err = port.Retry(ctx, cfg.Logger, "create streams", func(ctx context.Context) error {
		var err error
		reconnects = nc.Stats().Reconnects
		st, err = ensureStreams(ctx, js, cfg)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	s.log = &Log{nc: nc, js: js, stream: st, timeout: cfg.Timeout, replicated: cfg.Replicas > 1,
		readers: make(chan struct{}, maxLogReaders), quorum: cfg.QuorumReachable, storeFailed: cfg.StoreFailed, logger: cfg.Logger}
	s.log.group.l = s.log
	go s.log.probe()
	s.windows = newWindows(nc, js, cfg, reconnects)
	go s.windows.watch()
	return s, nil
}

// Ports are the engine's ports on this store.
func (s *Store) Ports() port.Set {
	return port.Set{Log: s.log, Queue: &queue{js: s.js, logger: s.cfg.Logger},
		Live: &live{nc: s.nc, logger: s.cfg.Logger}, Windows: s.windows}
}

// Log is the event log port.
func (s *Store) Log() *Log { return s.log }

// ensureStreams creates or updates apprun's streams (the event log, and
// the rate-limit windows that are on) and returns the event log.
func ensureStreams(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.Stream, error) {
	st, err := ensureStream(ctx, js, jetstream.StreamConfig{
		Name:               StreamName,
		Description:        "apprun event log: accounts, keys, prices, runs",
		Subjects:           subjects.All(),
		Storage:            jetstream.FileStorage,
		Replicas:           cfg.Replicas,
		AllowDirect:        true,
		AllowAtomicPublish: true,
		// Records that are no part of the billing history expire
		// (Idempotency-Keys, webhook jobs and deliveries) or keep only
		// their newest message (key use, delivery state).
		AllowMsgTTL: true,
		AllowRollup: true,
		Duplicates:  2 * time.Minute,
		RePublish:   &jetstream.RePublish{Source: subjects.Of(subjects.KindRun, ">"), Destination: subjLive + "run.>"},
	})
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", StreamName, err)
	}
	if _, err := ensureLedger(ctx, js, cfg); err != nil {
		return nil, fmt.Errorf("stream %s: %w", LedgerStreamName, err)
	}
	for _, sc := range windowConfigs(cfg) {
		if _, err := ensureWindow(ctx, js, cfg, sc); err != nil {
			return nil, fmt.Errorf("stream %s: %w", sc.Name, err)
		}
	}
	return st, nil
}

// windowConfigs are the rate-limit window streams that are on.
func windowConfigs(cfg Config) []jetstream.StreamConfig {
	var out []jetstream.StreamConfig
	for _, rl := range []struct {
		name, subj string
		limit      int
	}{{streamRLCreate, subjRLC, cfg.Limits.CreatePerMinute}, {streamRLRead, subjRLR, cfg.Limits.ReadsPerMinute}} {
		if rl.limit <= 0 {
			continue
		}
		out = append(out, jetstream.StreamConfig{
			Name:                 rl.name,
			Description:          "apprun sliding-window rate limit: one message per counted request",
			Subjects:             []string{rl.subj + "*"},
			Storage:              windowStorage(cfg.Replicas),
			Replicas:             cfg.Replicas,
			MaxAge:               time.Minute,
			MaxMsgsPerSubject:    int64(rl.limit),
			Discard:              jetstream.DiscardNew,
			DiscardNewPerSubject: true,
			AllowDirect:          true,
		})
	}
	return out
}

// windowWait bounds one attempt at a window stream.
const windowWait = 3 * time.Second

// windowStorage is where a window is kept. A window on one server lives in
// memory. A replicated one is kept on disk: a replicated in-memory stream
// loses its replication state when every member stops, and then finds no
// leader with only part of them back (2 of 3 looped on "context deadline
// exceeded" after a full stop), while a new one cannot be placed on 3
// replicas with 2 members up.
func windowStorage(replicas int) jetstream.StorageType {
	if replicas > 1 {
		return jetstream.FileStorage
	}
	return jetstream.MemoryStorage
}

// ensureWindow creates or updates a rate-limit window stream. One kept
// where it no longer belongs (in memory, on a cluster, from an earlier
// version) is deleted and made again: its content is a minute of counts.
func ensureWindow(ctx context.Context, js jetstream.JetStream, cfg Config, sc jetstream.StreamConfig) (jetstream.Stream, error) {
	wctx, cancel := context.WithTimeout(ctx, windowWait)
	w, err := ensureStream(wctx, js, sc)
	cancel()
	if err == nil || ctx.Err() != nil {
		return w, err
	}
	ictx, cancel := context.WithTimeout(ctx, windowWait)
	old, ierr := js.Stream(ictx, sc.Name)
	cancel()
	if ierr != nil || old.CachedInfo().Config.Storage == sc.Storage {
		return nil, err
	}
	cfg.Logger.Warn("eventlog: a rate-limit window is kept in the wrong storage; making it again", "stream", sc.Name,
		"storage", sc.Storage.String())
	dctx, cancel := context.WithTimeout(ctx, windowWait)
	derr := js.DeleteStream(dctx, sc.Name)
	cancel()
	if derr != nil && !errors.Is(derr, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("delete the window to make it again: %w", derr)
	}
	cctx, cancel := context.WithTimeout(ctx, windowWait)
	defer cancel()
	return ensureStream(cctx, js, sc)
}
