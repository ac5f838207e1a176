// Package eventlog implements the engine's ports (engine.Log, Queue, Live
// and Windows) on NATS JetStream. It owns the streams, the atomic batches,
// the direct gets, the durable consumers, the republished live events and
// the rate-limit window streams, and it turns every NATS error into one of
// the port's outcomes (engine.ErrConflict, ErrUnavailable, ErrAmbiguous,
// ErrNoMessage), so nothing above it matches a NATS error.
package eventlog

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/apprun/apprun/engine"
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
	var ws map[string]jetstream.Stream
	err = engine.Retry(ctx, cfg.Logger, "create streams", func(ctx context.Context) error {
		var err error
		st, ws, err = ensureStreams(ctx, js, cfg)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	s.log = &Log{nc: nc, js: js, stream: st, timeout: cfg.Timeout, replicated: cfg.Replicas > 1,
		readers: make(chan struct{}, maxLogReaders)}
	s.windows = &windows{nc: nc, js: js, timeout: cfg.Timeout, streams: ws,
		limits: map[engine.Window]int{engine.WindowCreate: cfg.Limits.CreatePerMinute, engine.WindowRead: cfg.Limits.ReadsPerMinute}}
	return s, nil
}

// Ports are the engine's ports on this store.
func (s *Store) Ports() engine.Ports {
	return engine.Ports{Log: s.log, Queue: &queue{js: s.js, logger: s.cfg.Logger},
		Live: &live{nc: s.nc, logger: s.cfg.Logger}, Windows: s.windows}
}

// Log is the event log port.
func (s *Store) Log() *Log { return s.log }

// ensureStreams creates or updates apprun's streams and returns the event
// log and the rate-limit windows that are on (by stream name).
func ensureStreams(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.Stream, map[string]jetstream.Stream, error) {
	st, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:               StreamName,
		Description:        "apprun event log: accounts, keys, prices, runs",
		Subjects:           engine.StreamSubjects(),
		Storage:            jetstream.FileStorage,
		Replicas:           cfg.Replicas,
		AllowDirect:        true,
		AllowAtomicPublish: true,
		Duplicates:         2 * time.Minute,
		RePublish:          &jetstream.RePublish{Source: engine.SubjectOf(engine.KindRun, ">"), Destination: subjLive + "run.>"},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("stream %s: %w", StreamName, err)
	}
	windows := map[string]jetstream.Stream{}
	for _, rl := range []struct {
		name, subj string
		limit      int
	}{{streamRLCreate, subjRLC, cfg.Limits.CreatePerMinute}, {streamRLRead, subjRLR, cfg.Limits.ReadsPerMinute}} {
		if rl.limit <= 0 {
			continue
		}
		w, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name:                 rl.name,
			Description:          "apprun sliding-window rate limit: one message per counted request",
			Subjects:             []string{rl.subj + "*"},
			Storage:              jetstream.MemoryStorage,
			Replicas:             cfg.Replicas,
			MaxAge:               time.Minute,
			MaxMsgsPerSubject:    int64(rl.limit),
			Discard:              jetstream.DiscardNew,
			DiscardNewPerSubject: true,
			AllowDirect:          true,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("stream %s: %w", rl.name, err)
		}
		windows[rl.name] = w
	}
	return st, windows, nil
}
