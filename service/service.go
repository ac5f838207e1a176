package service

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service/live"
	"github.com/apprun/apprun/service/store"
	"github.com/apprun/apprun/subjects"
	"golang.org/x/crypto/bcrypt"
)

// Reads is what the service reads from the read models (the projections
// implement it): finished runs for retention. Everything a decision or a
// run needs (accounts, prices, brand contexts) it reads from the log.
type Reads interface {
	// FinishedBefore lists up to limit runs that ended before t, oldest first.
	FinishedBefore(t time.Time, limit int) ([]engine.FinishedRun, error)
}

// Config configures an Engine. Zero values get defaults in New.
type Config struct {
	Catalog *engine.Catalog
	Limits  engine.Limits
	Reads   Reads
	// Workers bounds how many runs this node executes at once (default 32).
	Workers int
	// ReplayCatalog is the catalog replays run (default Catalog): with
	// every App runnable, a model configured or not, since a replay calls
	// none.
	ReplayCatalog *engine.Catalog
	// Models are the models a rerun may ask for: the provider's
	// configured model and those the operator offers besides
	// (APPRUN_RERUN_MODELS); none without a provider. A run's price does
	// not depend on its model, so the operator says which it pays for.
	Models []string
	// NoRecord leaves runs' records out of their logs (record.go): only
	// their created and streamed events are written.
	NoRecord bool
	// SweepEvery is how often expired runs are removed (default 1m).
	SweepEvery time.Duration
	// CheckpointEvery is how often the ledger's checkpoint is written
	// when account events came since the last (default 1m; with a
	// Signer only).
	CheckpointEvery time.Duration
	// Standalone says no other node can share this log (embedded NATS
	// without a client port or cluster): the rate limits are then counted
	// in memory, exactly, without a JetStream request per request, and
	// admissions read webhook endpoints from this node's cache
	// (the store's lastCache).
	Standalone bool
	// Webhooks configures webhook deliveries.
	Webhooks WebhookConfig
	// Now is the clock (default time.Now); events carry its time.
	Now func() time.Time
	// IntN picks a random number in [0, n) (default math/rand/v2's): where
	// a free platform slot is looked for first. The simulation seeds it.
	IntN func(n int) int
	// Signer signs every account event (ledger/chain.go); nil writes
	// them unsigned.
	Signer *ledger.Signer
	// Entropy makes ids and API keys (default crypto/rand); only the
	// simulation replaces it, with a seeded source.
	Entropy io.Reader
	// Sleep waits between retries (default time.Sleep); the simulation
	// moves its clock instead.
	Sleep func(time.Duration)
	// Go runs a read beside the request that waits for it (default a
	// goroutine: a create's webhook endpoints, admission.go); the
	// simulation runs it at once, in its own order, as it runs all else.
	Go func(func())
	// PasswordCost is the bcrypt cost of new passwords (default
	// bcrypt.DefaultCost). A test option: no flag or variable sets it;
	// tests lower it, since the race detector makes one hash at the
	// default cost take most of a second.
	PasswordCost int
	Logger       *slog.Logger
}

// Service runs apprun's domain on its ports (port.go): admission of runs
// with their charge, execution, accounts, keys, prices and brand contexts.
type Service struct {
	cfg   Config
	ports port.Set
	log   *store.Store
	hub   *live.Hub
	exec  *executor
	sweep *sweeper
	hooks *dispatcher
	// counters feed Stats.
	counters counters
	// finished: the stream events of finished runs (live.Finished).
	finished live.Finished
	// reads and creates are the in-memory rate-limit windows of a
	// standalone node (nil otherwise).
	reads, creates *localWindows
	// createsFull: on a shared log, until when each key's creation window
	// was last found full by this node (key id → time.Time), for
	// CreateWindowFull. Bounded by the keys refused in the last minute.
	createsFull  sync.Map
	createsNoted atomic.Uint64
	// acked: creates answered before the read models applied them (acked.go).
	acked port.HighWater
	// dummyHash: what an unknown email's sign-in checks (login.go).
	dummyHash []byte
	// priceCopy: which copy of a price this node's admissions check
	// (price.go); another one after a conflict the log does not explain.
	priceCopy atomic.Int32

	// voiding: runs whose admission voidLater is resolving (run_no →
	// true), which a retry with their key must not be handed yet.
	voiding sync.Map

	stopOnce sync.Once
	// stopped ends background work (voidLater) when the service stops.
	stopped chan struct{}
}

// New validates cfg and prepares an Engine on its ports.
func New(ports port.Set, cfg Config) (*Service, error) {
	if ports.Log == nil || ports.Queue == nil || ports.Live == nil || ports.Windows == nil {
		return nil, errors.New("service: every port (Log, Queue, Live, Windows) is required")
	}
	if cfg.Catalog == nil {
		return nil, errors.New("service: Catalog is required")
	}
	if cfg.Reads == nil {
		return nil, errors.New("service: Reads is required")
	}
	if cfg.SweepEvery <= 0 {
		cfg.SweepEvery = time.Minute
	}
	if cfg.CheckpointEvery <= 0 {
		cfg.CheckpointEvery = time.Minute
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
	if cfg.IntN == nil {
		cfg.IntN = rand.IntN
	}
	if cfg.Entropy == nil {
		cfg.Entropy = crand.Reader
	}
	if cfg.Sleep == nil {
		cfg.Sleep = time.Sleep
	}
	if cfg.Go == nil {
		cfg.Go = func(fn func()) { go fn() }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.PasswordCost == 0 {
		cfg.PasswordCost = bcrypt.DefaultCost
	}
	if cfg.PasswordCost < bcrypt.MinCost || cfg.PasswordCost > bcrypt.MaxCost {
		return nil, fmt.Errorf("service: PasswordCost %d is not a bcrypt cost (%d to %d)", cfg.PasswordCost, bcrypt.MinCost, bcrypt.MaxCost)
	}
	dummy, err := dummyHashAt(cfg.PasswordCost)
	if err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	e := &Service{cfg: cfg, ports: ports, log: store.New(ports.Log, cfg.Signer), dummyHash: dummy, stopped: make(chan struct{})}
	e.priceCopy.Store(int32(cfg.IntN(priceCopies)))
	if cfg.Standalone && cfg.Limits.ReadsPerMinute > 0 {
		e.reads = newLocalWindows(cfg.Limits.ReadsPerMinute)
	}
	if cfg.Standalone && cfg.Limits.CreatePerMinute > 0 {
		e.creates = newLocalWindows(cfg.Limits.CreatePerMinute)
	}
	return e, nil
}

// Start writes the catalog's initial prices, and starts the live-event hub,
// the executor, the webhook dispatcher and the retention sweeper. It
// returns once all are running.
func (s *Service) Start(ctx context.Context) error {
	if err := s.Prepare(ctx); err != nil {
		return err
	}
	s.hub = live.NewHub(s.cfg.Logger)
	if err := s.hub.Start(s.ports.Live); err != nil {
		return fmt.Errorf("service: live hub: %w", err)
	}
	s.exec = newExecutor(s)
	if err := s.exec.start(ctx); err != nil {
		s.hub.Stop()
		return fmt.Errorf("service: executor: %w", err)
	}
	hooks, err := startDispatcher(ctx, s)
	if err != nil {
		s.exec.stop()
		s.hub.Stop()
		return fmt.Errorf("service: webhooks: %w", err)
	}
	s.hooks = hooks
	s.sweep = startSweeper(s)
	return nil
}

// Prepare writes the catalog's prices, as Start does, but starts no
// executor, hub or sweeper: enough to write (the bench's probe).
func (s *Service) Prepare(ctx context.Context) error {
	if err := s.seedPrices(ctx); err != nil {
		return fmt.Errorf("service: seed prices: %w", err)
	}
	return nil
}

// Stop stops the executor (runs in flight are abandoned to redelivery) and
// the hub. Safe twice and before Start.
func (s *Service) Stop() {
	s.stopOnce.Do(func() {
		close(s.stopped)
		if s.sweep != nil {
			s.sweep.stop()
		}
		if s.exec != nil {
			s.exec.stop()
		}
		s.hooks.stop()
		if s.hub != nil {
			s.hub.Stop()
		}
	})
}

// Catalog returns the Apps.
func (s *Service) Catalog() *engine.Catalog { return s.cfg.Catalog }

// now is the time events carry: UTC, to the millisecond, the one
// precision the API shows (RFC 3339 with at most three fraction digits).
func (s *Service) now() time.Time { return s.cfg.Now().UTC().Truncate(time.Millisecond) }

// internal wraps an unexpected failure: logged by the caller's adapter and
// shown to clients only as internal_error.
func internal(op string, err error) error {
	return fmt.Errorf("service: %s: %w", op, err)
}

// LogHead is the sequence of the newest message in the log: a node whose
// read models have reached it has seen every write made anywhere before.
func (s *Service) LogHead(ctx context.Context) (uint64, error) {
	head, err := s.ports.Log.Head(ctx)
	if err != nil {
		return 0, internal("log head", err)
	}
	return head, nil
}

// Writable says whether the event log can take writes now: connected,
// with a stream leader (the eventlog probes it). While it cannot, requests
// fail at once with ErrUnavailable.
func (s *Service) Writable() bool { return s.ports.Log.Available() }

// Unready says why this node cannot serve requests now, or nil when it
// can: the log cannot take writes, or the shared rate-limit windows, which
// every limited request counts in, cannot count. (A standalone node counts
// in memory and needs no window.) /readyz answers 503 with it: a node
// whose windows were lost with a server that restarted answered 503 to
// every call while it said it was ready.
func (s *Service) Unready() error {
	if err := s.ports.Log.Unavailable(); err != nil {
		return err
	}
	shared := !s.cfg.Standalone && (s.cfg.Limits.CreatePerMinute > 0 || s.cfg.Limits.ReadsPerMinute > 0)
	if shared {
		return s.ports.Windows.Unavailable()
	}
	return nil
}

// AccountSeq is the sequence of an account's newest ledger event (a
// run's admission, settle and refund are among them), or ErrNotFound.
func (s *Service) AccountSeq(ctx context.Context, accountID string) (uint64, error) {
	m, err := s.ports.Log.Last(ctx, subjects.Account(accountID))
	if errors.Is(err, port.ErrNoMessage) {
		return 0, port.ErrNotFound
	}
	if err != nil {
		return 0, internal("read account", err)
	}
	return m.Seq, nil
}

// RunSeq is the sequence of a run's newest event, or ErrNotFound: it lets
// a node whose read models lag wait for a run created on another node.
func (s *Service) RunSeq(ctx context.Context, runNo string) (uint64, error) {
	var ev engine.RunEvent
	seq, err := s.log.Last(ctx, subjects.Run(runNo), &ev)
	if errors.Is(err, port.ErrNoMessage) {
		return 0, port.ErrNotFound
	}
	if err != nil {
		return 0, internal("read run", err)
	}
	return seq, nil
}

// Observe takes a message of the log as this node's read models applied
// it: a newer state of an entity the cache holds (another node's write, on
// a shared log) replaces the cached one, so admissions rarely meet a
// compare-and-set they must retry.
func (s *Service) Observe(m port.Message) { s.log.Observe(m) }

// id is a new id with prefix from the service's entropy (crypto/rand
// unless the simulation seeds it).
func (s *Service) id(prefix string, n int) string { return engine.NewID(s.cfg.Entropy, prefix, n) }

// newRunNo is a run number made now from the service's entropy.
func (s *Service) newRunNo() string { return engine.NewRunNo(s.cfg.Entropy, s.now()) }

// maxCASRetries bounds compare-and-set retries under contention.
const maxCASRetries = 64

// casPauseAfter is how many tries a compare-and-set loop spends at once
// before it pauses between tries.
const casPauseAfter = 5

// casTries is the tries of a compare-and-set loop: the first casPauseAfter
// at once (a conflict with a local writer clears as soon as the log is read
// again), each later one after a short random pause. On a replicated stream
// a check fails for as long as another node's write on the subject is being
// replicated; tries spent back to back ran out under a CPU hog and answered
// "busy" to a request that a pause would have let through.
func (s *Service) casTries() iter.Seq[int] {
	return func(yield func(int) bool) {
		for attempt := range maxCASRetries {
			if attempt >= casPauseAfter {
				s.cfg.Sleep(s.backoff(attempt))
			}
			if !yield(attempt) {
				return
			}
		}
	}
}

// backoff is the pause before a later try: random, so that contenders
// spread out, and growing with the tries spent.
func (s *Service) backoff(attempt int) time.Duration {
	return time.Duration(s.cfg.IntN(attempt*200)+50) * time.Microsecond
}
