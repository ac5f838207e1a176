// Package worker consumes a work queue of the log for the service: each
// item on a goroutine of its own, at most Slots at once, kept in progress
// by a heartbeat while it runs, then acknowledged, handed back for later
// or dropped, as its handler says. The executor (run jobs) and the
// webhook dispatcher (deliveries) run on it; what an item means, and
// what doing it writes, is theirs.
package worker

import (
	"context"
	"sync"
	"time"

	"github.com/apprun/apprun/port"
)

// Outcome is what becomes of an item once its handler returns.
type Outcome struct {
	kind  int
	delay time.Duration
}

const (
	ack = iota
	retry
	drop
)

// Done acknowledges the item: it is not delivered again.
func Done() Outcome { return Outcome{kind: ack} }

// Retry hands the item back, to be delivered again after delay.
func Retry(delay time.Duration) Outcome { return Outcome{kind: retry, delay: delay} }

// Drop drops the item for good.
func Drop() Outcome { return Outcome{kind: drop} }

// Handler does one item. ctx ends when the pool stops.
type Handler func(ctx context.Context, msg port.QueueMsg) Outcome

// Config says which queue to consume and how.
type Config struct {
	Spec port.QueueSpec
	// Slots bounds the items done at once (0: no bound). An item that
	// finds none free waits for one; one that arrives while the pool
	// stops is handed back at once.
	Slots int
	// Heartbeat, when set, is how often a running item is marked in
	// progress, so that the queue does not hand it to another consumer
	// while it runs (well within Spec.AckWait).
	Heartbeat time.Duration
}

// Pool consumes one queue.
type Pool struct {
	cfg    Config
	do     Handler
	halt   func() // stops the consumption
	ctx    context.Context
	cancel context.CancelFunc
	slots  chan struct{} // nil: no bound

	mu      sync.Mutex // guards stopped and running.Add against Stop's Wait
	stopped bool
	running sync.WaitGroup
}

// Start consumes cfg.Spec's queue from q, doing each item with do.
func Start(ctx context.Context, q port.Queue, cfg Config, do Handler) (*Pool, error) {
	p := &Pool{cfg: cfg, do: do}
	if cfg.Slots > 0 {
		p.slots = make(chan struct{}, cfg.Slots)
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	halt, err := q.Consume(ctx, cfg.Spec, p.handle)
	if err != nil {
		p.cancel()
		return nil, err
	}
	p.halt = halt
	return p, nil
}

// Stop stops the consumption, ends the handlers' context and waits for
// them to return. A nil Pool stops at once.
func (p *Pool) Stop() {
	if p == nil {
		return
	}
	p.halt()
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.cancel()
	p.running.Wait()
}

// Busy is how many items are being done now (0 for a nil Pool, and
// without a bound on slots).
func (p *Pool) Busy() int {
	if p == nil || p.slots == nil {
		return 0
	}
	return len(p.slots)
}

func (p *Pool) handle(msg port.QueueMsg) {
	if p.slots != nil {
		select {
		case p.slots <- struct{}{}:
		case <-p.ctx.Done():
			msg.Nak(0) // not started: hand it back at once
			return
		}
	}
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		p.free()
		msg.Nak(0)
		return
	}
	p.running.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.running.Done()
		defer p.free()
		stopBeat := heartbeat(msg, p.cfg.Heartbeat)
		out := p.do(p.ctx, msg)
		stopBeat()
		switch out.kind {
		case ack:
			msg.Ack()
		case retry:
			msg.Nak(out.delay)
		default:
			msg.Term()
		}
	}()
}

func (p *Pool) free() {
	if p.slots != nil {
		<-p.slots
	}
}

// heartbeat tells the queue the item is still in progress, every every,
// until stopped (never, when every is 0).
func heartbeat(msg port.QueueMsg, every time.Duration) func() {
	if every <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				msg.InProgress()
			}
		}
	}()
	return func() { close(done) }
}
