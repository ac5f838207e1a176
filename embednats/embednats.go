// Package embednats owns the in-process nats-server that apprun runs when no
// external NATS URL is configured: JetStream on a file store with
// SyncAlways (every acknowledged write is fsynced: this is a billing log),
// no TCP listener unless asked for, and an in-process client connection.
package embednats

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
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
	// Cluster, when its Name is set, joins this server to a JetStream
	// cluster of embedded servers over routes.
	Cluster Cluster
	// Secret authenticates whatever reaches the server over TCP: clients
	// (user "apprun") and routes from the other members. Required when the
	// server opens a port (Listen, or Cluster); at least 16 characters,
	// the same on every member.
	Secret string
	// Logger, when set, receives the server's warnings and errors, marked
	// component=nats (log.go); without one the server logs nothing.
	Logger *slog.Logger
}

// User is the user name clients and routes present with the Secret.
const User = "apprun"

// Forbidden are the JetStream API calls the User may not make: deleting
// the event log or the ledger stream, deleting from or purging the
// ledger stream. apprun never makes them; someone with the secret cannot
// either.
var Forbidden = []string{"$JS.API.STREAM.DELETE.APPRUN", "$JS.API.STREAM.DELETE.APPRUN_LEDGER",
	"$JS.API.STREAM.PURGE.APPRUN_LEDGER", "$JS.API.STREAM.MSG.DELETE.APPRUN_LEDGER"}

func quoted(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

// Cluster configures routes between embedded servers.
type Cluster struct {
	Name   string   // cluster name, the same on every member
	Listen string   // host:port this member accepts routes on
	Routes []string // host:port of every member (its own may be included)
}

// Server is a running embedded nats-server.
type Server struct {
	cfg  Config
	ns   *server.Server
	once sync.Once
	// storeFailed is the server's word for a store that takes no more
	// writes (log.go).
	storeFailed atomic.Pointer[string]
}

// New validates the config and fills its defaults.
func New(cfg Config) (*Server, error) {
	if cfg.StoreDir == "" {
		return nil, errors.New("embednats: StoreDir is required")
	}
	if c := cfg.Cluster; c.Name != "" && (c.Listen == "" || len(c.Routes) == 0) {
		return nil, errors.New("embednats: a cluster member needs a route listen address and routes")
	}
	if cfg.Listen != "" || cfg.Cluster.Name != "" {
		if len(cfg.Secret) < 16 || strings.ContainsAny(cfg.Secret, "\"'\\ \t\r\n{}$") {
			return nil, errors.New("embednats: a server that opens a port (a client port or a cluster) needs a secret of at least 16 characters, without quotes, spaces, braces or $: set APPRUN_CLUSTER_SECRET, the same on every member")
		}
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

// Start starts the server and waits until it accepts connections. A
// cluster member's JetStream becomes usable once a quorum has formed;
// callers retry their first JetStream requests until then.
func (s *Server) Start() error {
	opts, err := s.options()
	if err != nil {
		return err
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("embednats: new server: %w", err)
	}
	sl := serverLog{l: slog.New(slog.DiscardHandler)}
	if s.cfg.Logger != nil {
		sl.l = s.cfg.Logger.With("component", "nats")
	}
	if s.cfg.Cluster.Name == "" {
		sl.failed = &s.storeFailed
	}
	ns.SetLogger(sl, false, false)
	ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		ns.Shutdown()
		return errors.New("embednats: server not ready within 30s")
	}
	s.ns = ns
	return nil
}

// options builds the server options from a configuration text, the way
// nats-server itself is configured (clusters built from Options structs
// have lost stream leaders after restarts: nats-server#6890).
func (s *Server) options() (*server.Options, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "server_name: %q\n", s.cfg.ServerName)
	// A member that lost a route logs a failed reconnect once a minute
	// (the first, then every 60th attempt), not every second on every
	// pooled route: nats-server's default, 1, wrote 4 lines a second for
	// as long as a member was down.
	b.WriteString("reconnect_error_reports: 60\n")
	fmt.Fprintf(&b, "jetstream {\n  store_dir: %q\n  max_memory_store: %d\n  max_file_store: %d\n", s.cfg.StoreDir, s.cfg.MaxMemory, s.cfg.MaxStore)
	if !s.cfg.NoSync {
		b.WriteString("  sync_interval: always\n")
	}
	b.WriteString("}\n")
	if s.cfg.Secret != "" {
		// Whoever holds the secret may not delete the event log or the
		// ledger stream, nor ask the ledger stream to delete or purge (it
		// refuses anyway: eventlog.LedgerStreamName).
		fmt.Fprintf(&b, "authorization {\n  users: [\n    { user: %q, password: %q,\n      permissions: { publish: { allow: \">\", deny: [%s] } } }\n  ]\n}\n",
			User, s.cfg.Secret, strings.Join(quoted(Forbidden), ", "))
	}
	if c := s.cfg.Cluster; c.Name != "" {
		routes := make([]string, len(c.Routes))
		for i, r := range c.Routes {
			u := url.URL{Scheme: "nats-route", User: url.UserPassword(User, s.cfg.Secret), Host: r}
			routes[i] = fmt.Sprintf("%q", u.String())
		}
		fmt.Fprintf(&b, "cluster {\n  name: %q\n  listen: %q\n  routes: [%s]\n  authorization {\n    user: %q\n    password: %q\n  }\n}\n",
			c.Name, c.Listen, strings.Join(routes, ", "), User, s.cfg.Secret)
	}
	opts := &server.Options{}
	if err := opts.ProcessConfigString(b.String()); err != nil {
		return nil, fmt.Errorf("embednats: config: %w", err)
	}
	opts.NoSigs, opts.NoLog = true, true
	switch {
	case s.cfg.Listen == "" && s.cfg.Cluster.Name != "":
		// A cluster member with DontListen never completes its start-up
		// (nats-server 2.15); it opens route ports anyway, so it takes a
		// random client port on loopback instead.
		opts.Host, opts.Port = "127.0.0.1", server.RANDOM_PORT
	case s.cfg.Listen == "":
		opts.DontListen = true
	default:
		host, port, err := splitHostPort(s.cfg.Listen)
		if err != nil {
			return nil, err
		}
		opts.Host, opts.Port = host, port
	}
	return opts, nil
}

// Connect opens an in-process client connection to the server.
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	if s.ns == nil {
		return nil, errors.New("embednats: not started")
	}
	opts = append([]nats.Option{nats.InProcessServer(s.ns), nats.Name("apprun")}, opts...)
	if s.cfg.Secret != "" {
		opts = append(opts, nats.UserInfo(User, s.cfg.Secret))
	}
	return nats.Connect("", opts...)
}

// QuorumReachable reports whether this member is connected over routes to
// a majority of its cluster, itself included: while it is, a stream
// without a leader is in an election that will end; while it is not, no
// write can succeed until members come back. A server outside a cluster
// always reaches its quorum.
func (s *Server) QuorumReachable() bool {
	c := s.cfg.Cluster
	if c.Name == "" || s.ns == nil {
		return true
	}
	members := map[string]bool{c.Listen: true}
	for _, r := range c.Routes {
		members[r] = true
	}
	return s.ns.NumRemotes()+1 >= len(members)/2+1
}

// StoreFailed is "" while the server's store takes writes; once a write
// failed in a way that nats-server keeps for good (a disk that filled
// under a stream: the stream refuses every later write, space or not), it
// is the server's words for it, until the server restarts. A cluster
// member's is always "": another member takes its streams over.
func (s *Server) StoreFailed() string {
	if p := s.storeFailed.Load(); p != nil {
		return *p
	}
	return ""
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
