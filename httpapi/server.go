package httpapi

import (
	"context"
	"crypto/ed25519"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/service"
	"github.com/apprun/apprun/service/live"
	"github.com/gorilla/mux"
	"golang.org/x/time/rate"
)

// MCPWait is how long an MCP tool call may wait for its run by default
// (Config.MCPWait): the edge lets its answer write for that long, and a
// request's time besides.
const MCPWait = 10 * time.Minute

// Engine is what the handlers need of the domain.
type Engine interface {
	Catalog() *engine.Catalog
	CreateRun(ctx context.Context, req service.CreateRunRequest) (service.CreatedRun, error)
	CreateWindowFull(keyID string) (service.Quota, error)
	CancelRun(ctx context.Context, accountID, runNo string) (engine.Run, uint64, error)
	RunRecord(ctx context.Context, accountID, runNo string) (service.RunRecord, error)
	RunLastSeq(ctx context.Context, runNo string) (uint64, error)
	RunRecordAdmin(ctx context.Context, runNo string) (service.RunRecord, error)
	Rerun(ctx context.Context, req service.RerunRequest) (service.CreatedRun, []string, error)
	Compare(ctx context.Context, accountID, runNo, with string) (service.Comparison, error)
	ReplayRun(ctx context.Context, runNo string) (service.ReplayReport, error)
	WebhookSecret(ctx context.Context, accountID string) (string, error)
	Deliveries(ctx context.Context, accountID string, limit int) ([]service.Delivery, error)
	Redeliver(ctx context.Context, accountID, runNo string) error
	WebhookEndpoints(ctx context.Context, accountID string) ([]service.WebhookEndpoint, uint64, error)
	AddWebhookEndpoint(ctx context.Context, accountID, url string) (service.WebhookEndpoint, error)
	RemoveWebhookEndpoint(ctx context.Context, accountID, id string) error
	AllowReadQuota(ctx context.Context, keyID string) (service.Quota, error)
	Watch(ctx context.Context, runNo string, after uint64, idle time.Duration,
		send func([]live.StreamEvent) (bool, error), quiet func(uint64) (bool, error)) error
	OpenAccount(ctx context.Context, email string, credits int64, by ledger.By) (service.NewAccount, error)
	GrantCredits(ctx context.Context, id string, amount int64, by ledger.By) (int64, uint64, error)
	AdjustCredits(ctx context.Context, id string, amount int64, by ledger.By) (int64, uint64, error)
	CreateKey(ctx context.Context, accountID, name string) (service.NewKey, error)
	RevokeKey(ctx context.Context, keyID string) (uint64, error)
	TouchKey(ctx context.Context, keyID string) error
	SetPrice(ctx context.Context, slug string, cost int64, recalibrating bool, by ledger.By) (engine.Price, uint64, error)
	PriceHistory(ctx context.Context, slug string) ([]service.PricePoint, error)
	CreateBrandContext(ctx context.Context, accountID string, bc engine.BrandContext) (engine.BrandContext, uint64, error)
	UpdateBrandContext(ctx context.Context, accountID, id string, edit engine.BrandEdit) (engine.BrandContext, uint64, error)
	DeleteBrandContext(ctx context.Context, accountID, id string) (uint64, error)
	LogHead(ctx context.Context) (uint64, error)
	Writable() bool
	Unready() error
	RunSeq(ctx context.Context, runNo string) (uint64, error)
	Stats() service.Stats
	UnmatchedPayments(ctx context.Context) ([]service.Unmatched, error)
	Checkpoint(ctx context.Context) ([]byte, error)
	AccountCheckpoint(ctx context.Context, accountID string) ([]byte, error)
}

// ReadModel is what the handlers read: the projections.
type ReadModel interface {
	KeyByHash(hash string) (engine.Key, error)
	KeyByID(id string) (engine.Key, error)
	Account(id string) (ledger.Account, error)
	Run(runNo string) (engine.Run, error)
	// AppliedRun is Run as this node has applied it, without waiting for
	// the run's newest event in the log (the event stream's heartbeat).
	AppliedRun(runNo string) (engine.Run, error)
	RunsOf(accountID string, before uint64, limit int) ([]engine.Run, uint64, error)
	Lines(accountID string, limit int) ([]ledger.Line, bool, error)
	Accounts(after string, limit int) ([]ledger.Account, string, error)
	Price(slug string) (engine.Price, error)
	BrandContextsOf(accountID string) ([]engine.BrandContext, error)
	WaitFor(ctx context.Context, seq uint64) error
	// Applied is the log sequence through which the read models applied
	// the log (/metrics: how far behind the log's head they are).
	Applied() uint64
	Ready() bool
	// Failed is why the read models stopped applying the log for good
	// (until a restart), or nil.
	Failed() error
	RunsByStatus() (map[engine.Status]int64, error)
	// Snapshot copies the read models, as of one moment, to a new file at
	// path and says through which log sequence they applied (a live
	// audit's copy).
	Snapshot(path string) (uint64, error)
}

// Sessions resolves a website session to its account.
type Sessions interface {
	SessionAccount(r *http.Request) (accountID string, ok bool)
}

// Config configures the HTTP surface.
type Config struct {
	Engine Engine
	Reads  ReadModel
	// AdminToken is the admin token named "admin", and AdminTokens more
	// admin tokens by name: an admin call's events and log line name the
	// token's name as their actor ("admin:<name>").
	AdminToken  string
	AdminTokens map[string]string
	// LedgerKey verifies the ledger's signatures: served to anyone.
	LedgerKey ed25519.PublicKey
	// Heartbeat is the SSE comment interval (default 15s).
	Heartbeat time.Duration
	// WriteWait bounds how long a write's answer waits for the read model
	// to show it (default 5s).
	WriteWait time.Duration
	// RequestTimeout bounds reading and answering one request (default
	// 30s); event streams are exempt from it.
	RequestTimeout time.Duration
	// MCPWait is how long an MCP tool call may wait for its run (the
	// edge's write deadline on /mcp adds RequestTimeout to it).
	MCPWait time.Duration
	// StreamsPerKey caps the event streams one API key holds open on this
	// node (default 20).
	StreamsPerKey int
	// StreamsPerAccount caps the event streams all of an account's keys
	// and sessions hold open on this node (default 40), so more keys do
	// not mean more streams.
	StreamsPerAccount int
	// StreamTokenTTL is how long a stream token works (default 10 minutes).
	StreamTokenTTL time.Duration
	// Sessions, when set, lets a website session follow its own runs'
	// event streams without an API key (the browser's EventSource cannot
	// send an Authorization header). Only GET of an event stream takes it.
	Sessions Sessions
	// Billing sells Credits (nil: none sold; the packs route says how
	// Credits are added).
	Billing Seller
	// StoreFailed, when set, is "" while the embedded server's store takes
	// writes, else why it takes none until the node restarts
	// (embednats.Server.StoreFailed): /healthz then fails, so that a
	// supervisor restarts the node.
	StoreFailed func() string
	// Refusals are the budgets of refused requests, per key and per
	// client address (refusals.go); zero values are no limit.
	Refusals RefusalLimits
	Logger   *slog.Logger
}

// API is the HTTP handler set.
type API struct {
	cfg    Config
	router *mux.Router
	// fastRun serves a run's GET ahead of the router (runroute.go).
	fastRun http.Handler
	closing chan struct{}
	// closed ends with Close: open streams end with it.
	closed      context.Context
	closeStream context.CancelFunc
	streams     *streamRegistry
	refused     *refusals
	metrics     *metrics
	views       *viewCache
	// keyMisses bounds how often an unknown key makes this node catch up
	// with the log before answering 401 (a key made on another node).
	keyMisses *rate.Limiter
	// tokenKey signs stream tokens.
	tokenKey []byte
	// admins are the admin tokens, by name.
	admins []adminToken
	// touched is when this node last recorded each key's use (key id →
	// time.Time): a key's last-used time is kept to the minute.
	touched sync.Map
	// doc is the OpenAPI document, encoded once (the catalog is fixed
	// while the node runs).
	doc     []byte
	docOnce sync.Once
}

// New builds the router.
func New(cfg Config) (*API, error) {
	if cfg.Engine == nil || cfg.Reads == nil {
		return nil, errors.New("httpapi: Engine and Reads are required")
	}
	admins, err := adminTokens(cfg.AdminToken, cfg.AdminTokens)
	if err != nil {
		return nil, err
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	if cfg.WriteWait <= 0 {
		cfg.WriteWait = 5 * time.Second
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.MCPWait <= 0 {
		cfg.MCPWait = MCPWait
	}
	if cfg.StreamsPerKey <= 0 {
		cfg.StreamsPerKey = 20
	}
	if cfg.StreamsPerAccount <= 0 {
		cfg.StreamsPerAccount = 2 * cfg.StreamsPerKey
	}
	if cfg.StreamTokenTTL <= 0 {
		cfg.StreamTokenTTL = 10 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	// SkipClean: a path that is not in its clean form (a double slash, a
	// dot segment) is a 404 in the envelope, not the router's 301 to the
	// clean path, which clients that follow redirects resend as a GET: a
	// create became a read of the run list, answered 200.
	a := &API{cfg: cfg, router: mux.NewRouter().SkipClean(true), closing: make(chan struct{}), streams: newStreamRegistry(cfg.StreamsPerKey, cfg.StreamsPerAccount),
		keyMisses: rate.NewLimiter(50, 50)}
	a.router.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isOAuthProbe(r.URL.Path) {
			writeError(w, r, a.cfg.Logger, errorf(engine.CodeNotFound, "%s: apprun does not do OAuth; authenticate with an API key "+
				"(Authorization: Bearer ak_…, made on the website under API keys)", r.URL.Path))
			return
		}
		writeError(w, r, a.cfg.Logger, errorf(engine.CodeNotFound, "no such endpoint: %s %s", r.Method, r.URL.Path))
	})
	a.router.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", AllowedMethods(a.router, r))
		writeError(w, r, a.cfg.Logger, errorf(engine.CodeMethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path))
	})
	a.closed, a.closeStream = context.WithCancel(context.Background())
	a.metrics, a.views = newMetrics(a), newViewCache()
	a.refused, a.metrics.answered = newRefusals(cfg.Refusals), a.noteRefusal
	// What no route takes is counted too, as "unmatched" (the router's
	// middleware runs on matched routes only).
	a.router.NotFoundHandler = a.metrics.observe(a.router.NotFoundHandler)
	a.router.MethodNotAllowedHandler = a.metrics.observe(a.router.MethodNotAllowedHandler)
	a.admins = admins
	a.tokenKey = streamTokenKey(admins)
	a.router.Use(a.middleware()...)
	a.fastRun = a.chain(a.reader(a.getRun))
	a.routeRuns() // first: see there
	a.routeHealth()
	a.routeLedgerKey()
	a.routeCheckpoints()
	a.routeEvents()
	a.routeCapabilities()
	a.routeAccount()
	a.routeBrandContexts()
	a.routeAdmin()
	a.routeOperability()
	a.routeOpenAPI()
	a.routeWebhooks()
	a.routeBilling()
	go a.watchRevocations()
	return a, nil
}

// ServeHTTP implements http.Handler: a run's GET on its fast path
// (runroute.go), everything else through the router.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, ok := runOfPath(r); ok {
		a.fastRun.ServeHTTP(w, r)
		return
	}
	a.router.ServeHTTP(w, r)
}

// Close ends open event streams cleanly (each stops after its current
// write); the server's Shutdown then finds them gone.
func (a *API) Close() {
	select {
	case <-a.closing:
	default:
		close(a.closing)
	}
	a.closeStream()
}

func (a *API) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				a.cfg.Logger.Error("panic in handler", "route", routeOf(r), "panic", v)
				writeError(w, r, a.cfg.Logger, errors.New("panic"))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// fail writes err as the error envelope.
func (a *API) fail(w http.ResponseWriter, r *http.Request, err error) {
	writeError(w, r, a.cfg.Logger, err)
}

// stored is called once the log has stored a write at seq, before its
// answer: it waits (bounded) until the read models show it, so that the
// answer and the next read agree. The write is stored whatever happens
// here, so the answer is the write's: a wait that fails is logged, and
// the reads after it wait for seq in turn (projections.Current.WaitFor).
// An error answer would hide a stored write, and its retry make it twice
// (a grant granted twice).
func (a *API) stored(r *http.Request, seq uint64, what string) {
	if err := a.awaitRead(r.Context(), seq); err != nil {
		a.cfg.Logger.Warn(what+": stored, not yet in this node's read models", "seq", seq, "err", err)
	}
}

// awaitRead waits until the read model shows the write at seq.
func (a *API) awaitRead(ctx context.Context, seq uint64) error {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.WriteWait)
	defer cancel()
	return a.cfg.Reads.WaitFor(ctx, seq)
}

// routeHealth registers GET /healthz (liveness) and GET /readyz
// (readiness).
func (a *API) routeHealth() {
	a.router.HandleFunc("/healthz", a.health).Methods(http.MethodGet)
	a.router.HandleFunc("/readyz", a.ready).Methods(http.MethodGet)
}

// ready answers GET /readyz: 200 only when this node can serve (the event
// log is reachable and its stream has a leader, the rate-limit windows
// count: engine.Unready) and its read models have caught up; 503 with the
// reason and Retry-After otherwise. A load balancer sends traffic to
// ready nodes only.
func (a *API) ready(w http.ResponseWriter, r *http.Request) {
	unready := a.cfg.Engine.Unready()
	switch {
	case unready != nil:
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": unready.Error()})
	case a.cfg.Reads.Failed() != nil:
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "failed", "reason": readsStopped(a.cfg.Reads.Failed())})
	case !a.cfg.Reads.Ready():
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "starting", "reason": "the read models are catching up with the log"})
	default:
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	}
}

// readsStopped is the probes' reason when the read models stopped, with
// why (the node's log has it too).
func readsStopped(err error) string {
	return "the read models stopped applying the log and apply nothing more until the node restarts: " + err.Error()
}

// health answers GET /healthz: 200 once the read models caught up, 503
// while they have not, or when the node needs a restart (its embedded
// server's store failed a write it keeps refusing).
func (a *API) health(w http.ResponseWriter, r *http.Request) {
	if a.cfg.StoreFailed != nil && a.cfg.StoreFailed() != "" {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "failed",
			"reason": "the embedded server's store failed a write and takes no more until the node restarts (a disk that filled?): see the node's log"})
		return
	}
	if err := a.cfg.Reads.Failed(); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "failed", "reason": readsStopped(err)})
		return
	}
	if !a.cfg.Reads.Ready() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "starting"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}
