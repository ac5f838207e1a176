package projections

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/internal/jsconsume"
	"github.com/apprun/apprun/port"
	"github.com/nats-io/nats.go/jetstream"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

var (
	bucketMeta         = []byte("meta")
	bucketAccounts     = []byte("accounts")
	bucketKeys         = []byte("keys")         // key hash → Key
	bucketKeyIDs       = []byte("key_ids")      // key id → key hash
	bucketAcctKeys     = []byte("account_keys") // account id + key id → key hash
	bucketRuns         = []byte("runs")
	bucketAcctRuns     = []byte("account_runs") // account id + created seq → run_no
	bucketBrands       = []byte("brand_contexts")
	bucketAcctBrands   = []byte("account_brand_contexts") // account id + brand context id → brand context id
	bucketPrices       = []byte("prices")
	bucketLedger       = []byte("account_ledger")    // account id + seq → ledger.Line
	bucketFinished     = []byte("finished_runs")     // finished-at + run_no → engine.FinishedRun
	bucketStatusCounts = []byte("run_status_counts") // status → how many runs have it
	keyApplied         = []byte("applied_seq")
	keySchema          = []byte("schema_version")
	allBuckets         = [][]byte{bucketMeta, bucketAccounts, bucketKeys, bucketKeyIDs, bucketAcctKeys, bucketRuns, bucketAcctRuns, bucketBrands, bucketAcctBrands, bucketPrices, bucketLedger, bucketFinished, bucketStatusCounts}
)

// schemaVersion changes whenever the read models change shape; a file of
// another version is emptied and rebuilt from the log.
const schemaVersion = "9" // 9: each account's brand contexts, and deleted ones gone

// maxBatch bounds how many events one transaction applies.
const maxBatch = 4096

// ReplayPull is how much of the log the consumer asks for at a time on a
// connection whose server takes messages of up to maxPayload bytes: 16 MiB
// of messages, not nats.go's default of 500 (refilled at 250). With the
// default a rebuild kept the 2 cores 86 % busy, the client waiting on each
// refill; with a large pull, 96 %, and 14–20 % more events a second
// (BENCHMARKS.md, thirteenth pass). Bytes, not a count, bound the memory a
// catch-up buffers whatever the events hold. A message larger than the
// whole pull would stall the consumer, so the pull is at least twice the
// largest message the server takes (its subject and headers count too);
// nats-server warns above 8 MiB. The bench's bare replay reads with it
// too, so that it stays the rebuild's ceiling.
func ReplayPull(maxPayload int64) jetstream.PullMaxBytes {
	return jetstream.PullMaxBytes(max(16<<20, 2*maxPayload))
}

// Store is the bbolt file of read models and the applier that feeds it.
type Store struct {
	db     *bolt.DB
	path   string
	logger *slog.Logger
	// boot is the boot id the file's commits are not fsynced under, with a
	// marker beside it; "" when every commit is fsynced (unsynced.go).
	boot string
	// keys and runs cache the records every request reads.
	keys *recordCache[engine.Key]
	runs *recordCache[engine.Run]

	mu      sync.Mutex
	applied uint64
	target  uint64        // stream's last sequence when Start ran
	advance chan struct{} // closed and replaced whenever applied moves
	failed  error
	// waits are the events WaitFor calls wait for: the applier commits as
	// soon as its batch holds one (gather.go).
	waits *waits
	// observe, when set, sees every applied message (Observe).
	observe func(port.Message)

	cc      jetstream.ConsumeContext
	in      chan event
	done    chan struct{}
	exited  chan struct{} // closed when the applier has returned
	stopped sync.Once

	closed   sync.Once
	closeErr error
}

// Open opens (or creates) the projection file at path. A damaged file, one
// bbolt cannot open, with a page or record that fails its check (see
// Verify), or left with commits never fsynced by a machine that stopped
// (unsynced.go), is moved aside as <path>.damaged-<time> and a new one is built
// from the log, with a warning: the log is the truth, the file a cache of
// it.
func Open(path string, logger *slog.Logger) (*Store, error) {
	if logger == nil {
		logger = slog.Default()
	}
	s, damage, err := open(path, logger)
	if err != nil || len(damage) == 0 {
		return s, err
	}
	aside := path + ".damaged-" + time.Now().UTC().Format("20060102T150405.000Z")
	if err := os.Rename(path, aside); err != nil {
		return nil, fmt.Errorf("projections: %s is damaged (%s) and cannot be moved aside: %w", path, damage[0], err)
	}
	logger.Warn("projections: damaged file moved aside; rebuilding it from the log",
		"path", path, "moved_to", aside, "damaged", len(damage), "first", damage[0].String())
	s, damage, err = open(path, logger)
	if err == nil && len(damage) > 0 {
		s, err = nil, fmt.Errorf("projections: a new file at %s is damaged: %s", path, damage[0])
	}
	return s, err
}

// open opens the file and checks it: damage is what makes it unusable
// (nil store), err a failure that is not the file's (locked, no access).
func open(path string, logger *slog.Logger) (*Store, []Damage, error) {
	boot := bootID()
	if _, err := os.Stat(path); err == nil {
		if damage := tornDamage(path, boot); damage != nil {
			return nil, damage, nil
		}
	}
	db, damage, err := openBolt(path, 5*time.Second, boot != "")
	if err != nil || damage != nil {
		return nil, damage, err
	}
	// Marked once the file's lock is held (a node refused it leaves no
	// marker behind) and before its first commit that is not fsynced
	// (bbolt fsyncs a new file's first pages itself).
	if boot != "" {
		if err := markUnsynced(path, boot); err != nil {
			db.Close()
			return nil, nil, err
		}
	}
	s := &Store{db: db, path: path, boot: boot, logger: logger, advance: make(chan struct{}), waits: newWaits()}
	func() {
		defer func() {
			if p := recover(); p != nil { // a damaged page met by the reads below
				damage = []Damage{{Problem: fmt.Sprintf("reading the file failed: %v", p)}}
			}
		}()
		err = db.Update(func(tx *bolt.Tx) error {
			if meta := tx.Bucket(bucketMeta); meta != nil {
				if v, err := get(meta, keySchema); err != nil || string(v) != schemaVersion {
					logger.Info("projections: schema changed; rebuilding from the log", "path", path)
					for _, b := range allBuckets {
						if err := tx.DeleteBucket(b); err != nil && !errors.Is(err, bolterrors.ErrBucketNotFound) {
							return err
						}
					}
				}
			}
			for _, b := range allBuckets {
				if _, err := tx.CreateBucketIfNotExists(b); err != nil {
					return err
				}
			}
			if damage = verifyTx(tx); damage != nil {
				return errDamagedFile
			}
			applied, err := getU64(tx.Bucket(bucketMeta), keyApplied)
			if err != nil {
				return err
			}
			s.applied = applied
			return put(tx.Bucket(bucketMeta), keySchema, []byte(schemaVersion))
		})
	}()
	if damage != nil || err != nil {
		db.Close()
		if damage != nil {
			return nil, damage, nil
		}
		return nil, nil, fmt.Errorf("projections: init %s: %w", path, err)
	}
	s.keys, s.runs = newRecordCache[engine.Key](s.applied), newRecordCache[engine.Run](s.applied)
	return s, nil, nil
}

var errDamagedFile = errors.New("projections: damaged file")

// openBolt opens the bbolt file. A file bbolt refuses as invalid (damaged
// meta pages, a wrong version) or that panics it is reported as damage;
// a lock held by another process or a file it may not open is an error.
//
// With noSync its commits are not fsynced (unsynced.go).
func openBolt(path string, timeout time.Duration, noSync bool) (db *bolt.DB, damage []Damage, err error) {
	defer func() {
		if p := recover(); p != nil {
			db, damage, err = nil, []Damage{{Problem: fmt.Sprintf("the file does not open: %v", p)}}, nil
		}
	}()
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout, NoSync: noSync})
	switch {
	case err == nil:
		return db, nil, nil
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrChecksum),
		errors.Is(err, bolterrors.ErrVersionMismatch), errors.Is(err, bolterrors.ErrInvalidMapping):
		return nil, []Damage{{Problem: "the file does not open: " + err.Error()}}, nil
	}
	return nil, nil, fmt.Errorf("projections: open %s: %w", path, err)
}

// OpenExclusive opens the file for a tool that needs it alone (the audit):
// it fails at once when a running node holds it. It does not repair: a
// file that does not open, or that the machine stopped under while its
// commits were not fsynced (unsynced.go), is returned as damage with a nil
// store, and an open one is checked with Verify.
func OpenExclusive(path string) (*Store, []Damage, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, nil, fmt.Errorf("projections: %w", err)
	}
	if damage := tornDamage(path, bootID()); damage != nil {
		return nil, damage, nil
	}
	db, damage, err := openBolt(path, time.Second, false)
	if err != nil || damage != nil {
		return nil, damage, err
	}
	// The audit does not apply: an empty cache that never fills is right.
	s := &Store{db: db, logger: slog.Default(), advance: make(chan struct{}), waits: newWaits(),
		keys: newRecordCache[engine.Key](0), runs: newRecordCache[engine.Run](0)}
	damage = s.Verify()
	if damage == nil { // Applied: what the read models say they applied
		_ = db.View(func(tx *bolt.Tx) error {
			if meta := tx.Bucket(bucketMeta); meta != nil {
				s.applied, _ = getU64(meta, keyApplied)
			}
			return nil
		})
	}
	return s, damage, nil
}

// ConsumerIdle is how long a reader's ephemeral consumer (the read
// model's, the audit's) outlives its reader: one left behind by a node
// that stopped or lost its connection is removed by the server after this.
const ConsumerIdle = 30 * time.Second

// Start follows the stream from the first event not yet applied. Ready
// reports true once the store has caught up with the stream as it was now.
func (s *Store) Start(ctx context.Context, js jetstream.JetStream, stream string) error {
	var cons jetstream.Consumer
	err := port.Retry(ctx, s.logger, "start the projection consumer", func(ctx context.Context) error {
		st, err := js.Stream(ctx, stream)
		if err != nil {
			return fmt.Errorf("stream %s: %w", stream, err)
		}
		s.mu.Lock()
		s.target = st.CachedInfo().State.LastSeq
		from, behind := s.applied+1, s.applied > s.target
		s.mu.Unlock()
		if behind {
			return nil
		}
		cons, err = js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{
			DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: from,
			InactiveThreshold: ConsumerIdle,
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("projections: %w", err)
	}
	if cons == nil {
		s.logBehind()
		return nil
	}
	if info := cons.CachedInfo(); info != nil && info.NumPending == 0 {
		s.mu.Lock()
		if s.target > s.applied {
			s.logger.Warn("projections: the log's last sequence has no message (it was deleted): caught up at the last that has one",
				"last_sequence", s.target, "applied", s.applied)
			s.target = s.applied
		}
		s.mu.Unlock()
	}
	s.in = make(chan event, 4*maxBatch)
	s.done = make(chan struct{})
	done := s.done
	logs := jsconsume.NewLogger(s.logger)
	s.cc, err = cons.Consume(func(m jetstream.Msg) {
		ev := decodeMsg(m) // here, beside the applier's transaction (decode.go)
		select {
		case s.in <- ev:
		case <-done: // stopping: the message is read again on the next start
		}
	}, ReplayPull(js.Conn().MaxPayload()), jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		// The ordered consumer starts again by itself after a lost
		// consumer or missed heartbeats; an operator sees why the read
		// models paused.
		select {
		case <-done:
		default:
			logs.Log("projections: following the log", err)
		}
	}))
	if err != nil {
		return fmt.Errorf("projections: consume: %w", err)
	}
	s.exited = make(chan struct{})
	restore := func() {}
	s.mu.Lock()
	if s.target >= s.applied+catchUpFrom {
		restore = relaxGC() // a long catch-up (gc.go)
	}
	s.mu.Unlock()
	go func() {
		defer close(s.exited)
		defer restore()
		s.applyLoop(restore)
	}()
	return nil
}

// ErrLogBehind is why read models stop when the log ends before what they
// applied: the log lost its tail.
var ErrLogBehind = errors.New("projections: the log is shorter than the read models")

// logBehind stops the store for good, before it applies anything, when
// the log ends before the sequence it applied: the log lost its tail (a
// damaged or cut store, an older backup of it). Following it would skip
// every new write up to that sequence, and answer writes as shown while
// the read models still show the lost ones. The node says so in its log
// and in /readyz, and waits for an operator rather than for a sequence
// that may never come.
func (s *Store) logBehind() {
	s.mu.Lock()
	s.failed = fmt.Errorf("%w: it ends at sequence %d, but they applied it through %d: the log lost its tail "+
		"(a damaged or cut store, an older backup); restore the log's data from a backup (in a cluster, a replica holds it), "+
		"or accept the log as it is: stop the node, move projections.db aside and start it again to rebuild from the log", ErrLogBehind, s.target, s.applied)
	err := s.failed
	close(s.advance)
	s.advance = make(chan struct{})
	s.mu.Unlock()
	s.logger.Error("projections: the log is shorter than the read models; stopped", "err", err)
}

// Stop stops applying; Close closes the file. Both are safe twice.
func (s *Store) Stop() {
	s.stopped.Do(func() {
		if s.cc != nil {
			s.cc.Stop()
			close(s.done)
		}
	})
}

// Close stops the applier, waits for its last commit and closes the
// bbolt file (fsynced first, when its commits were not: closeFile).
func (s *Store) Close() error {
	s.Stop()
	if s.exited != nil {
		<-s.exited
	}
	s.closed.Do(func() { s.closeErr = s.closeFile() })
	return s.closeErr
}

// applyLoop applies the log until the store stops or an apply fails;
// caughtUp is called once the store is Ready.
func (s *Store) applyLoop(caughtUp func()) {
	var last time.Time // the last commit's start
	// buf holds each transaction's events in turn: one slice for the
	// store's life, not one grown for every batch.
	buf := make([]event, 0, maxBatch)
	for {
		var first event
		select {
		case <-s.done:
			return
		case first = <-s.in:
		}
		batch := gather(s.in, s.done, s.waits, first, commitEvery-time.Since(last), buf)
		if batch == nil {
			return
		}
		last = time.Now()
		err := s.applyBatch(batch)
		clear(batch) // the events' data is not kept alive by buf
		if err == nil && s.Ready() {
			caughtUp()
		}
		if err != nil {
			s.logger.Error("projections: apply failed; stopped", "err", err)
			s.mu.Lock()
			s.failed = err
			close(s.advance)
			s.advance = make(chan struct{})
			s.mu.Unlock()
			return
		}
	}
}

// Observe has fn called with every message applied, once its transaction
// is committed (the engine refreshes its admission cache with them). Set
// it before Start.
func (s *Store) Observe(fn func(port.Message)) { s.observe = fn }

func (s *Store) applyBatch(msgs []event) error {
	var last uint64
	var b *batch
	from := len(msgs) // the first message not applied before
	err := s.db.Update(func(tx *bolt.Tx) error {
		b = newBatch(tx)
		applied := s.Applied()
		for i, m := range msgs {
			if m.err != nil {
				return m.err
			}
			seq := m.seq
			if seq <= applied {
				continue // already in the file: applying twice changes nothing
			}
			if err := b.apply(m); err != nil {
				return fmt.Errorf("event %d on %s: %w", seq, m.subject, err)
			}
			applied, last = seq, seq
			from = min(from, i)
		}
		if last == 0 {
			return nil
		}
		if err := b.flush(); err != nil {
			return err
		}
		return put(tx.Bucket(bucketMeta), keyApplied, u64(last))
	})
	if err != nil || last == 0 {
		return err
	}
	if s.observe != nil {
		for _, m := range msgs[from:] {
			s.observe(port.Message{Subject: m.subject, Seq: m.seq, Data: m.data})
		}
	}
	s.runs.changed(last, b.touchedRuns(), false)
	s.keys.changed(last, nil, b.keysChanged)
	s.mu.Lock()
	if s.applied = last; s.target > last {
		// The stream's last sequence may have no message (deleted): the
		// store has caught up once nothing is pending after what it
		// applied.
		if n, ok := pendingAfter(msgs[len(msgs)-1].reply); ok && n == 0 {
			s.logger.Warn("projections: the log's last sequence has no message (it was deleted): caught up at the last that has one",
				"last_sequence", s.target, "last_message", last)
			s.target = last
		}
	}
	close(s.advance)
	s.advance = make(chan struct{})
	s.mu.Unlock()
	return nil
}

// Applied is the sequence of the last event applied.
func (s *Store) Applied() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applied
}

// Failed is the error that stopped the applier (an event it could not
// apply, a write to the file that failed), or nil: the store applies
// nothing more until the node restarts.
func (s *Store) Failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// Ready reports whether the store has caught up with the stream as it was
// when Start ran.
func (s *Store) Ready() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed == nil && s.applied >= s.target
}

// WaitFor waits until the event at seq has been applied: a write's answer
// waits for it so the writer reads its own write. The applier commits as
// soon as its batch holds the event (gather.go).
func (s *Store) WaitFor(ctx context.Context, seq uint64) error {
	counted := false
	for {
		s.mu.Lock()
		applied, ch, failed := s.applied, s.advance, s.failed
		s.mu.Unlock()
		if errors.Is(failed, ErrLogBehind) {
			return failed // what they applied is not the log's
		}
		if applied >= seq {
			return nil
		}
		if failed != nil {
			return failed
		}
		if !counted {
			counted = true
			s.waits.add(seq)
			defer s.waits.remove(seq)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("projections: waiting for event %d (applied %d): %w", seq, applied, ctx.Err())
		case <-ch:
		}
	}
}

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}
