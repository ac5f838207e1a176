// Package node is one apprun service: NATS (embedded or external), the
// engine, the read models and the HTTP server (API, event streams, MCP,
// the website), started and stopped in order. cmd/apprun parses its
// flags into a Config and runs one; tests start one with nodetest.
package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/apprun/apprun/apps"
	"github.com/apprun/apprun/billing"
	"github.com/apprun/apprun/edge"
	"github.com/apprun/apprun/embednats"
	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/eventlog"
	"github.com/apprun/apprun/httpapi"
	"github.com/apprun/apprun/inputschema"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/mailer"
	"github.com/apprun/apprun/mcp"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/projections"
	"github.com/apprun/apprun/service"
	"github.com/apprun/apprun/web"
	"github.com/apprun/apprun/webhook"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Node is one running apprun service: NATS (embedded or external), the
// engine, the projections and the HTTP server, started and stopped in order.
type Node struct {
	cfg   Config
	ns    *embednats.Server
	nc    *nats.Conn
	store *projections.Store
	// reads is what the surfaces read: store, up to date with the log
	// and with this node's answered creates.
	reads *projections.Current
	eng   *service.Service
	// signer signs the ledger; its public key is served.
	signer *ledger.Signer
	api    *httpapi.API
	site   *web.Site
	mux    http.Handler // the API and the website on one origin
	srv    *http.Server
	ln     net.Listener
	// conns counts what ln accepted (the caps of Config.Conns).
	conns *edge.ConnListener
	lock  *dataLock
	// apps and runnable count the catalog's Apps, for the start log.
	apps, runnable int
	// outbox is dev mode's outbox of mail (mail.go), or nil.
	outbox *mailer.Outbox
}

// New checks cfg; Start brings the node up.
func New(cfg Config) (*Node, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 7 * 24 * time.Hour
	}
	return &Node{cfg: cfg}, nil
}

// Start starts every part; on failure what started is stopped again.
func (n *Node) Start(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			n.Stop()
		}
	}()
	// What can fail without touching the disk fails first: the catalog,
	// then the port. Nothing is created in the data directory before.
	list, err := n.cfg.Catalog()
	if err != nil {
		return err
	}
	catalog, err := engine.NewCatalog(inputschema.Compile, list...)
	if err != nil {
		return err
	}
	n.apps, n.runnable = len(list), len(catalog.Runnable())
	replayCatalog := catalog
	if n.cfg.Model.BaseURL == "" && n.cfg.Apps == nil {
		replayList, err := n.cfg.ReplayCatalog()
		if err != nil {
			return err
		}
		if replayCatalog, err = engine.NewCatalog(inputschema.Compile, replayList...); err != nil {
			return err
		}
	}
	if n.ln, err = net.Listen("tcp", n.cfg.Addr); err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("listen %s: the port is in use (another apprun?): stop it, or choose another --addr (APPRUN_ADDR)", n.cfg.Addr)
		}
		return fmt.Errorf("listen %s: %w", n.cfg.Addr, err)
	}
	if err := os.MkdirAll(n.cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	if n.lock, err = lockDataDir(n.cfg.DataDir); err != nil {
		return err
	}
	if err := n.connect(ctx); err != nil {
		return err
	}
	if n.store, err = projections.Open(filepath.Join(n.cfg.DataDir, "projections.db"), n.cfg.Logger); err != nil {
		return err
	}
	var quorum func() bool
	var storeFailed func() string
	if n.ns != nil {
		quorum, storeFailed = n.ns.QuorumReachable, n.ns.StoreFailed
	}
	events, err := eventlog.Open(ctx, n.nc, eventlog.Config{Replicas: n.cfg.Replicas, Logger: n.cfg.Logger,
		Limits: n.cfg.Limits, QuorumReachable: quorum, StoreFailed: storeFailed})
	if err != nil {
		return err
	}
	hooks := n.cfg.Webhooks
	hooks.Sender = webhook.NewSender(hooks.AllowPrivate)
	standalone := n.cfg.NATSURL == "" && n.cfg.NATSListen == "" && n.cfg.ClusterName == ""
	ports := events.Ports()
	if n.cfg.TestAmbiguousAdmissions > 0 {
		ports.Log = &ambiguousAdmissions{Log: ports.Log, every: int64(n.cfg.TestAmbiguousAdmissions)}
	}
	if n.signer, err = n.cfg.ledgerSigner(standalone, n.cfg.Logger); err != nil {
		return err
	}
	n.eng, err = service.New(ports, service.Config{Catalog: catalog, Limits: n.cfg.Limits, Reads: n.store,
		Logger: n.cfg.Logger, SweepEvery: n.cfg.RetentionSweep, CheckpointEvery: n.cfg.CheckpointEvery, Standalone: standalone, Webhooks: hooks,
		PasswordCost: n.cfg.PasswordCost, Signer: n.signer, ReplayCatalog: replayCatalog, NoRecord: n.cfg.NoRecord,
		Models: n.cfg.models()})
	if err != nil {
		return err
	}
	if err := n.eng.Start(ctx); err != nil {
		return err
	}
	js, err := jetstream.New(n.nc)
	if err != nil {
		return err
	}
	n.store.Observe(n.eng.Observe) // fresh admission caches on a shared log
	if err := n.store.Start(ctx, js, eventlog.StreamName); err != nil {
		return err
	}
	// What the surfaces read: each read of a run or an account waits until
	// the read models have applied the creates this node answered before
	// they did (engine.Acknowledged) and, on a shared log, the log's newest
	// event on it, so a client reads on any node what it wrote on another.
	var seqs projections.LogSeqs // nil: standalone, the log's only writer
	if !standalone {
		seqs = n.eng
	}
	n.reads = projections.NewCurrent(n.store, seqs, n.eng.Acknowledged, 0)
	var kv jetstream.KeyValue
	if err := port.Retry(ctx, n.cfg.Logger, "create the sessions bucket", func(ctx context.Context) (err error) {
		kv, err = eventlog.Ensure(ctx, func(ctx context.Context) (jetstream.KeyValue, error) {
			return web.SessionBucket(ctx, js, n.cfg.SessionTTL, n.cfg.Replicas)
		}, func(ctx context.Context) (jetstream.KeyValue, bool) {
			kv, err := js.KeyValue(ctx, web.SessionBucketName)
			if err != nil {
				return nil, false
			}
			st, err := kv.Status(ctx)
			return kv, err == nil && st.TTL() == n.cfg.SessionTTL
		})
		return err
	}); err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	exampleIn, exampleOut := examples()
	bcfg := n.cfg.Billing
	bcfg.Logger, bcfg.SiteURL = n.cfg.Logger, n.cfg.PublicURL
	if bcfg.SiteURL == "" {
		bcfg.SiteURL = "http://" + n.Addr()
	}
	seller, err := billing.New(bcfg, n.eng)
	if err != nil {
		return err
	}
	siteCfg := web.Config{Engine: n.eng, Reads: n.reads, Sessions: kv, SessionTTL: n.cfg.SessionTTL,
		SignupCredits: n.cfg.SignupCredits, SecureCookies: n.cfg.SecureCookies, Examples: exampleIn, ExampleOutputs: exampleOut, Seller: seller, Logger: n.cfg.Logger,
		Now: n.cfg.SiteClock}
	if err := n.siteMail(ctx, js, &siteCfg); err != nil { // mail.go
		return err
	}
	if n.site, err = web.New(siteCfg); err != nil {
		return err
	}
	n.api, err = httpapi.New(httpapi.Config{Engine: n.eng, Reads: n.reads, AdminToken: n.cfg.AdminToken, AdminTokens: n.cfg.AdminTokens, LedgerKey: n.signer.PublicKey(), Sessions: n.site, Billing: seller,
		StreamTokenTTL: n.cfg.StreamTokenTTL,
		Heartbeat:      n.cfg.Heartbeat, Logger: n.cfg.Logger, StreamsPerKey: n.cfg.StreamsPerKey,
		StreamsPerAccount: n.cfg.StreamsPerAccount, RequestTimeout: n.cfg.RequestTimeout, WriteWait: n.cfg.WriteWait,
		StoreFailed: storeFailed, Refusals: n.cfg.Refusals})
	if err != nil {
		return err
	}
	mcpHandler, err := mcp.New(mcp.Config{Engine: n.eng, Reads: n.reads, Logger: n.cfg.Logger, Version: "v1"})
	if err != nil {
		return err
	}
	n.site.Use(n.api.Metered)
	n.mux = n.edge(mcpHandler)
	conns := edge.LimitConns(n.ln, n.cfg.Conns, n.cfg.Logger)
	if n.cfg.BeforeServe != nil {
		if err := n.cfg.BeforeServe(ctx, n); err != nil {
			return err
		}
	}
	// An event stream that ends cleanly gives its connection back (edge/reuse.go).
	reuse := edge.Reuse(conns)
	srv, ln := &http.Server{Handler: n.mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute,
		MaxHeaderBytes: MaxHeaderBytes, ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return reuse.ConnContext(conns.ConnContext(ctx, c), c)
		}}, reuse
	n.srv, n.conns = srv, conns
	go func() { // its own copies: Stop clears the node's fields
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.cfg.Logger.Error("http server stopped", "err", err)
		}
	}()
	return nil
}

// edge is the one pipeline in front of the node's surfaces, each
// registered with what it owns, takes and says: the event streams and the
// profiles (long GETs), MCP (its tool calls stream until their run ends),
// the API, and the website, which owns the rest. The bodies read before
// their sender is known have their own budgets, each 8 MiB a node: the
// sign-in and sign-up forms (a few hundred bytes each), 512 KiB of it an
// address, and Stripe's events (a few KiB), 1 MiB an address, where
// addresses are clients' (not behind a proxy: conns-per-addr is on).
func (n *Node) edge(mcpHandler http.Handler) *edge.Edge {
	forms, events := edge.BudgetLimits{Total: 8 << 20}, edge.BudgetLimits{Total: 8 << 20}
	if n.cfg.Conns.PerAddr > 0 {
		forms.PerAddr, events.PerAddr = 512<<10, 1<<20
	}
	e := edge.New(edge.Config{RequestTimeout: n.cfg.RequestTimeout, OnRefused: n.api.NoteRefusedAddress})
	e.Register(edge.Surface{Name: "event streams", Owns: httpapi.IsEventStream, Handler: n.api, Long: true, Refuse: n.api.Refuse})
	e.Register(edge.Surface{Name: "profiles", Owns: httpapi.IsProfile, Handler: n.api, Long: true, Refuse: n.api.Refuse})
	e.Register(edge.Surface{Name: "long admin answers", Owns: httpapi.IsLongAdmin, Handler: n.api, Long: true, Refuse: n.api.Refuse})
	e.Register(edge.Surface{Name: "MCP", Owns: func(r *http.Request) bool { return r.URL.Path == "/mcp" },
		Handler:   n.api.Metered(n.api.RequireKey(n.api.ReadMessage(httpapi.Enveloped(mcpHandler)))),
		WriteWait: httpapi.MCPWait, Refuse: n.api.Refuse})
	e.Register(edge.Surface{Name: "API", Owns: func(r *http.Request) bool { return httpapi.IsAPIPath(r.URL.Path) },
		Handler: n.api, BodyLimit: httpapi.BodyLimit, ReadsUnknown: n.api.ReadsUnknown(edge.NewBudget(events)), Refuse: n.api.Refuse})
	e.Register(edge.Surface{Name: "website", Handler: n.site, BodyLimit: func(*http.Request) int64 { return web.FormBodyLimit },
		ReadsUnknown: web.ReadsUnknown(edge.NewBudget(forms)), Refuse: n.site.Refuse})
	return e
}

// MaxHeaderBytes bounds a request's line and headers. A client sends an
// API key, a session cookie and a few more; net/http's default, 1 MiB,
// let every connection hold a megabyte through the header timeout;
// proxies in front commonly accept 32 to 64 KiB.
const MaxHeaderBytes = 64 << 10

// externalConnectWait is how long a node waits for an external NATS that
// does not answer at start (started at the same moment, restarting)
// before it gives up with the reason.
const externalConnectWait = time.Minute

func (n *Node) connect(ctx context.Context) error {
	if n.cfg.NATSURL != "" {
		deadline := time.Now().Add(externalConnectWait)
		for {
			nc, err := nats.Connect(n.cfg.NATSURL, n.natsOptions()...)
			if err == nil {
				n.nc = nc
				return nil
			}
			if !errors.Is(err, nats.ErrNoServers) || time.Now().After(deadline) {
				return fmt.Errorf("connect %s: %w", redactURL(n.cfg.NATSURL), err)
			}
			n.cfg.Logger.Info("waiting for NATS", "url", redactURL(n.cfg.NATSURL), "err", err)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second):
			}
		}
	}
	ns, err := embednats.New(embednats.Config{StoreDir: filepath.Join(n.cfg.DataDir, "nats"), Listen: n.cfg.NATSListen,
		ServerName: n.cfg.ServerName, Secret: n.cfg.ClusterSecret, Logger: n.cfg.Logger,
		Cluster: embednats.Cluster{Name: n.cfg.ClusterName, Listen: n.cfg.ClusterListen, Routes: n.cfg.Routes}})
	if err != nil {
		return err
	}
	if err := ns.Start(); err != nil {
		return err
	}
	n.ns = ns
	n.nc, err = ns.Connect()
	return err
}

// natsOptions are the client options for an external NATS (several URLs
// may be given, comma-separated, in APPRUN_NATS_URL).
func (n *Node) natsOptions() []nats.Option {
	opts := []nats.Option{nats.Name("apprun"), nats.MaxReconnects(-1)}
	if n.cfg.NATSCreds != "" {
		opts = append(opts, nats.UserCredentials(n.cfg.NATSCreds))
	}
	if n.cfg.NATSToken != "" {
		opts = append(opts, nats.Token(n.cfg.NATSToken))
	}
	if n.cfg.NATSCA != "" {
		opts = append(opts, nats.RootCAs(n.cfg.NATSCA))
	}
	if n.cfg.NATSCert != "" || n.cfg.NATSKey != "" {
		opts = append(opts, nats.ClientCert(n.cfg.NATSCert, n.cfg.NATSKey))
	}
	return opts
}

// Addr is the HTTP address the node listens on.
func (n *Node) Addr() string { return n.ln.Addr().String() }

// Handler is the node's HTTP handler (tests serve it through httptest).
func (n *Node) Handler() http.Handler { return n.mux }

// examples are the shipped definitions' first example inputs and
// outputs, by slug: the reference pages' curl examples and rendered
// example outputs.
func examples() (map[string]map[string]any, map[string]json.RawMessage) {
	inputs, outputs := map[string]map[string]any{}, map[string]json.RawMessage{}
	defs, err := apps.Shipped()
	if err != nil {
		return inputs, outputs
	}
	for _, d := range defs {
		if len(d.Examples) > 0 {
			inputs[d.Slug], outputs[d.Slug] = d.Examples[0].Input, d.Examples[0].Output
		}
	}
	return inputs, outputs
}

// API is the node's HTTP API (tests read its routes).
func (n *Node) API() *httpapi.API { return n.api }

// Engine is the node's engine (dev set-up and tests use it).
func (n *Node) Engine() *service.Service { return n.eng }

// Reads is the node's read model as its surfaces read it (Current).
func (n *Node) Reads() *projections.Current { return n.reads }

// Stop shuts down in reverse order, each step bounded: HTTP (ending event
// streams), executor, projections, bbolt, NATS. Safe twice.
func (n *Node) Stop() {
	if n.api != nil {
		n.api.Close()
	}
	if n.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = n.srv.Shutdown(ctx)
		cancel()
		n.srv = nil
	} else if n.ln != nil { // listening, never served: a start that failed
		_ = n.ln.Close()
	}
	if n.eng != nil {
		n.eng.Stop()
	}
	if n.store != nil {
		_ = n.store.Close()
		n.store = nil
	}
	if n.nc != nil {
		drainConn(n.nc, drainTimeout)
		n.nc = nil
	}
	if n.ns != nil {
		n.ns.Stop()
		n.ns = nil
	}
	n.lock.release()
	n.lock = nil
}

func redactURL(u string) string {
	if i := strings.Index(u, "@"); i >= 0 {
		if j := strings.Index(u, "://"); j >= 0 && j < i {
			return u[:j+3] + "***" + u[i:]
		}
	}
	return u
}

// drainTimeout bounds the NATS drain on shutdown.
const drainTimeout = 10 * time.Second

// drainConn drains nc (its subscriptions finish what they hold, its
// pending publishes are flushed) and waits, bounded, until the drain has
// closed it; only then does it close it outright.
func drainConn(nc *nats.Conn, timeout time.Duration) {
	closed := make(chan struct{})
	var once sync.Once
	nc.SetClosedHandler(func(*nats.Conn) { once.Do(func() { close(closed) }) })
	if err := nc.Drain(); err == nil {
		select {
		case <-closed:
		case <-time.After(timeout):
		}
	}
	nc.Close()
}

// Logger is the node's logger.
func (n *Node) Logger() *slog.Logger { return n.cfg.Logger }

// Apps counts the catalog's Apps and those that can run (with the model
// provider configured, or without one).
func (n *Node) Apps() (all, runnable int) { return n.apps, n.runnable }

// EmbeddedNATS is the node's embedded nats-server, or nil on an external
// NATS (tests stop it under a running node).
func (n *Node) EmbeddedNATS() *embednats.Server { return n.ns }

// NATS is the node's connection to NATS.
func (n *Node) NATS() *nats.Conn { return n.nc }

// Projections is the node's read-model store (tests stop it).
func (n *Node) Projections() *projections.Store { return n.store }

// Conns counts the connections the node's listener holds.
func (n *Node) Conns() *edge.ConnListener { return n.conns }

// RedactURL hides the credentials of a URL for a log line.
func RedactURL(u string) string { return redactURL(u) }
