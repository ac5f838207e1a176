// Package embednats owns the in-process nats-server that apprun runs when no
// external NATS URL is configured: JetStream on a file store with
// SyncAlways (every acknowledged write is fsynced: this is a billing log),
// no TCP listener unless asked for, and an in-process client connection.
package embednats

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Config says where and how the embedded server stores its data.
type Config struct {
	// StoreDir is the JetStream store directory. Required.
	StoreDir string
	// ServerName names the server; defaults to "apprun".
	ServerName string
	// Listen, when set ("127.0.0.1:4222"), opens a client port; empty
	// means no TCP port at all (several instances may run side by side).
	Listen string
	// MaxMemory and MaxStore bound JetStream (bytes); defaults 256 MiB and 8 GiB.
	MaxMemory int64
	MaxStore  int64
	// NoSync turns SyncAlways off. Only benchmarks comparing fsync policies use it.
	NoSync bool
}

// Server is a running embedded nats-server.
type Server struct {
	cfg  Config
	ns   *server.Server
	once sync.Once
}

// New validates the config and fills its defaults.
func New(cfg Config) (*Server, error) {
	if cfg.StoreDir == "" {
		return nil, errors.New("embednats: StoreDir is required")
	}
	if cfg.ServerName == "" {
		cfg.ServerName = "apprun"
	}
	if cfg.MaxMemory == 0 {
		cfg.MaxMemory = 256 << 20
	}
	if cfg.MaxStore == 0 {
		cfg.MaxStore = 8 << 30
	}
	return &Server{cfg: cfg}, nil
}

// Start starts the server and waits until it accepts connections.
func (s *Server) Start() error {
	opts := &server.Options{
		ServerName:         s.cfg.ServerName,
		JetStream:          true,
		StoreDir:           s.cfg.StoreDir,
		JetStreamMaxMemory: s.cfg.MaxMemory,
		JetStreamMaxStore:  s.cfg.MaxStore,
		SyncAlways:         !s.cfg.NoSync,
		NoSigs:             true,
		NoLog:              true,
	}
	if s.cfg.Listen == "" {
		opts.DontListen = true
	} else {
		host, port, err := splitHostPort(s.cfg.Listen)
		if err != nil {
			return err
		}
		opts.Host, opts.Port = host, port
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("embednats: new server: %w", err)
	}
	ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		ns.Shutdown()
		return errors.New("embednats: server not ready within 30s")
	}
	s.ns = ns
	return nil
}

// Connect opens an in-process client connection to the server.
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	if s.ns == nil {
		return nil, errors.New("embednats: not started")
	}
	opts = append([]nats.Option{nats.InProcessServer(s.ns), nats.Name("apprun")}, opts...)
	return nats.Connect("", opts...)
}

// ClientURL is the server's client URL when it listens on TCP, else "".
func (s *Server) ClientURL() string {
	if s.ns == nil || s.cfg.Listen == "" {
		return ""
	}
	return s.ns.ClientURL()
}

// Stop shuts the server down and waits for it; safe twice and before Start.
func (s *Server) Stop() {
	s.once.Do(func() {
		if s.ns != nil {
			s.ns.Shutdown()
			s.ns.WaitForShutdown()
		}
	})
}
