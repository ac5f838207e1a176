package eventlog

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/apprun/apprun/port"
)

// Group commit of atomic appends.
//
// nats-server stages every atomic batch of an R1 file stream in a file
// store of its own and commits batches one after another (BENCHMARKS.md):
// a batch costs about 3.5 ms however few messages it holds, so one batch
// per admission capped a node at about 280 admissions a second. The
// multi-entry appends that wait while a batch is being committed are
// therefore committed together, as one batch, when it returns.
//
// Each append keeps its own outcome, exactly as if it had been written
// alone:
//   - stored: the batch is stored contiguously, so each append's last
//     sequence is read off the batch's;
//   - refused or unknown (ErrUnavailable, ErrAmbiguous): the whole batch
//     was, so each of its appends was;
//   - a failed check (ErrConflict) rejects the whole batch with no word of
//     whose check it was: each of its appends is then written again alone,
//     which gives it its own answer.
//
// Two appends that touch one subject never share a batch (the server fails
// a check on a subject written earlier in the same batch), and an append
// whose check is already known stale (this node wrote a later message on
// the subject) is answered ErrConflict without a write, so one stale
// append cannot sink the others' batch.

// maxGroupEntries bounds one group's batch (the server takes at most
// 1,000 messages a batch).
const maxGroupEntries = 256

// maxKnown bounds the sequences remembered for stale checks; the memory is
// cleared when it is full (forgetting only costs a solo retry).
const maxKnown = 1 << 16

type groupCall struct {
	entries []port.Entry
	done    chan groupResult
}

type groupResult struct {
	seq uint64
	err error
}

// group commits the concurrent multi-entry appends of one Log.
type group struct {
	l     *Log
	mu    sync.Mutex
	queue []*groupCall
	busy  bool
	// known holds, per subject, a sequence this node saw stored on it.
	known map[string]uint64
}

// append writes entries atomically with whatever else is waiting.
func (g *group) append(ctx context.Context, entries []port.Entry) (uint64, error) {
	c := &groupCall{entries: entries, done: make(chan groupResult, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, c)
	if !g.busy {
		g.busy = true
		go g.run()
	}
	g.mu.Unlock()
	select {
	case r := <-c.done:
		return r.seq, r.err
	case <-ctx.Done():
	}
	g.mu.Lock()
	for i, q := range g.queue {
		if q == c {
			g.queue = append(g.queue[:i], g.queue[i+1:]...)
			g.mu.Unlock()
			return 0, fmt.Errorf("%w: append not sent: %w", port.ErrUnavailable, ctx.Err())
		}
	}
	g.mu.Unlock()
	return 0, fmt.Errorf("%w: append sent, no answer before: %w", port.ErrAmbiguous, ctx.Err())
}

// run commits batches while appends wait, then ends. (take leaves
// nothing waiting when it takes nothing: it always takes the first append
// it does not answer.)
func (g *group) run() {
	for {
		g.mu.Lock()
		batch := g.take()
		if len(batch) == 0 {
			g.busy = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		g.commit(batch)
	}
}

// take removes from the queue the appends of the next batch, in order:
// none touching a subject an earlier one writes, at most maxGroupEntries
// entries. Appends known stale are answered at once. g.mu is held.
func (g *group) take() []*groupCall {
	var batch []*groupCall
	written := map[string]bool{}
	entries := 0
	rest := g.queue[:0]
	for _, c := range g.queue {
		if g.stale(c) {
			c.done <- groupResult{err: port.ErrConflict}
			continue
		}
		if (len(batch) > 0 && entries+len(c.entries) > maxGroupEntries) || touches(c, written) {
			rest = append(rest, c)
			continue
		}
		batch = append(batch, c)
		entries += len(c.entries)
		for _, e := range c.entries {
			written[e.Subject] = true
		}
	}
	clear(g.queue[len(rest):])
	g.queue = rest
	return batch
}

// touches reports whether c writes or checks a subject in written.
func touches(c *groupCall, written map[string]bool) bool {
	for _, e := range c.entries {
		if written[e.Subject] || (e.ExpectSubject != "" && written[e.ExpectSubject]) {
			return true
		}
	}
	return false
}

// stale reports whether a check of c is known to fail: it expects an
// earlier sequence than one this node saw stored on the subject. (Only a
// check for an existing message: after a purge "no message yet" may hold
// again.) g.mu is held.
func (g *group) stale(c *groupCall) bool {
	for _, e := range c.entries {
		if e.Expect == nil || *e.Expect == 0 {
			continue
		}
		subj := e.Subject
		if e.ExpectSubject != "" {
			subj = e.ExpectSubject
		}
		if seq, ok := g.known[subj]; ok && *e.Expect < seq {
			return true
		}
	}
	return false
}

// groupTries is how many times a batch whose check failed is written
// again whole before its appends are written alone: on a replicated
// stream a check fails while another node's batch checking the same
// subject (an account written from two nodes; before price copies, every
// admission's App price, engine/price.go) is being replicated, which says
// nothing of this batch's own checks.
const groupTries = 3

// commit writes batch as one atomic batch and answers each append.
func (g *group) commit(batch []*groupCall) {
	var all []port.Entry
	for _, c := range batch {
		all = append(all, c.entries...)
	}
	last, err := g.write(all)
	for try := 1; try < groupTries && len(batch) > 1 && g.l.replicated && errors.Is(err, port.ErrConflict); try++ {
		time.Sleep(time.Duration(try) * time.Duration(100+rand.IntN(400)) * time.Microsecond)
		last, err = g.write(all)
	}
	switch {
	case err == nil:
		end := last
		for i := len(batch) - 1; i >= 0; i-- {
			batch[i].done <- groupResult{seq: end}
			end -= uint64(len(batch[i].entries))
		}
	case errors.Is(err, port.ErrConflict) && len(batch) > 1:
		// Whose check failed is unknown: each append is written alone.
		for _, c := range batch {
			go func() {
				seq, err := g.write(c.entries)
				c.done <- groupResult{seq: seq, err: err}
			}()
		}
	default:
		for _, c := range batch {
			c.done <- groupResult{err: err}
		}
	}
}

// write commits entries as one batch and remembers what it stored. One
// entry (a lazy record nothing else came to share a batch with) is one
// plain write: an atomic batch of one would cost its staging for nothing.
func (g *group) write(entries []port.Entry) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), g.l.timeout)
	defer cancel()
	var last uint64
	var err error
	if len(entries) == 1 {
		last, err = g.l.publishOne(ctx, g.l.msg(entries[0]))
	} else {
		last, err = g.l.batch(ctx, entries)
	}
	if err != nil {
		return 0, err
	}
	g.mu.Lock()
	if len(g.known)+len(entries) > maxKnown || g.known == nil {
		g.known = make(map[string]uint64, len(entries))
	}
	for i, e := range entries {
		seq := last - uint64(len(entries)-1-i)
		if seq > g.known[e.Subject] {
			g.known[e.Subject] = seq
		}
	}
	g.mu.Unlock()
	return last, nil
}
