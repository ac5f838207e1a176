package projections

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
)

// LogSeqs tells where an entity stands in the log: the sequence of its
// newest event, as the stream's leader has it (the engine implements it).
type LogSeqs interface {
	RunSeq(ctx context.Context, runNo string) (uint64, error)
	AccountSeq(ctx context.Context, accountID string) (uint64, error)
	// Writable says the log is not known to be down (no quorum).
	Writable() bool
}

// Current is the read model the surfaces read. A write may be answered
// before this node's store has applied it: a create (its sequence is the
// floor, engine.Acknowledged), or, on a shared log, any write made on
// another node a moment ago. So each read of a run or an account first
// waits, bounded, until the store has applied both the floor and, on a
// shared log, the entity's newest sequence as the log has it: a client
// reads its own writes on any node.
type Current struct {
	*Store
	seqs  LogSeqs // nil on a standalone node, the log's only writer
	floor func() uint64
	wait  time.Duration
	// owed is the highest write whose answer gave up waiting for the
	// store (WaitFor): part of the floor.
	owed port.HighWater
}

// NewCurrent wraps s; seqs is nil on a standalone node; floor is the
// highest sequence this node answered before applying it; wait bounds
// each read's wait (default 15 s: a killed stream leader is replaced in 4
// to 10 s, and a read waits through that election rather than answer
// 503).
func NewCurrent(s *Store, seqs LogSeqs, floor func() uint64, wait time.Duration) *Current {
	if wait <= 0 {
		wait = 15 * time.Second
	}
	return &Current{Store: s, seqs: seqs, floor: floor, wait: wait}
}

// ErrBehind is a read that could not be brought up to date in time: the
// log did not answer, or this node's read model did not reach the entity's
// newest event. Nothing stale is served instead.
var ErrBehind = fmt.Errorf("projections: read model behind the log: %w", port.ErrUnavailable)

// upTo waits until the store has applied the floor and the entity's
// newest event (what names it, for an error). A log that does not answer
// during a leader election is asked again (100 ms doubling, within the
// wait); one known to be down is not. A standalone node that has applied
// its floor answers at once: the usual read pays no timer.
func (c *Current) upTo(kind, id string, seq func(context.Context) (uint64, error)) error {
	n := max(c.floor(), c.owed.Load())
	if c.seqs == nil && c.Applied() >= n {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.wait)
	defer cancel()
	if c.seqs != nil {
		newest, err := seq(ctx)
		for pause := 100 * time.Millisecond; errors.Is(err, port.ErrUnavailable) && c.seqs.Writable(); pause *= 2 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("%w: %s %s: %w", ErrBehind, kind, id, err)
			case <-time.After(pause):
			}
			newest, err = seq(ctx)
		}
		switch {
		case errors.Is(err, port.ErrNotFound):
			// nothing in the log: the store's not found is the answer
		case err != nil:
			return fmt.Errorf("%w: %s %s: %w", ErrBehind, kind, id, err)
		default:
			n = max(n, newest)
		}
	}
	if err := c.WaitFor(ctx, n); err != nil {
		return fmt.Errorf("%w: %s %s: %w", ErrBehind, kind, id, err)
	}
	return nil
}

// WaitFor waits until the store has applied seq, a write this node made,
// so that the write's answer and the next read agree. A wait that fails
// (the store stopped, or fell behind) leaves seq owed: every later read of
// a run or an account waits for it too, so that no read misses a write
// whose answer was given (the surfaces answer a stored write as stored).
func (c *Current) WaitFor(ctx context.Context, seq uint64) error {
	err := c.Store.WaitFor(ctx, seq)
	if err != nil {
		c.owed.Note(seq)
	}
	return err
}

// Run reads a run as of its newest event in the log.
func (c *Current) Run(runNo string) (engine.Run, error) {
	if err := c.upTo("run", runNo, func(ctx context.Context) (uint64, error) { return c.seqs.RunSeq(ctx, runNo) }); err != nil {
		return engine.Run{}, err
	}
	return c.Store.Run(runNo)
}

// AppliedRun reads a run as this node's store has applied it, without
// first asking the log for the run's newest event as Run does. It is for
// a check that is made again anyway, the event stream's heartbeat: Run
// there sent every open stream's request to the event log's leader every
// heartbeat (3,333 a second for 50,000 streams on a cluster), answered one
// after another by the leader's JetStream API, each holding up the
// stream's deliveries meanwhile (bench: cluster-stream).
func (c *Current) AppliedRun(runNo string) (engine.Run, error) {
	return c.Store.Run(runNo)
}

// Account reads an account as of its newest event in the log.
func (c *Current) Account(id string) (ledger.Account, error) {
	if err := c.account(id); err != nil {
		return ledger.Account{}, err
	}
	return c.Store.Account(id)
}

// RunsOf lists an account's runs as of its newest event in the log (a
// run's admission is one of the account's events).
func (c *Current) RunsOf(accountID string, before uint64, limit int) ([]engine.Run, uint64, error) {
	if err := c.account(accountID); err != nil {
		return nil, 0, err
	}
	return c.Store.RunsOf(accountID, before, limit)
}

// Statement lists an account's ledger lines as of its newest event.
func (c *Current) Statement(accountID string, before uint64, limit int) ([]ledger.Line, uint64, error) {
	if err := c.account(accountID); err != nil {
		return nil, 0, err
	}
	return c.Store.Statement(accountID, before, limit)
}

func (c *Current) account(id string) error {
	return c.upTo("account", id, func(ctx context.Context) (uint64, error) { return c.seqs.AccountSeq(ctx, id) })
}
