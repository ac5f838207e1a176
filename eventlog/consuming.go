package eventlog

import (
	"context"
	"sync"
	"time"

	"github.com/apprun/apprun/internal/jsconsume"
	"github.com/apprun/apprun/port"
	"github.com/nats-io/nats.go/jetstream"
)

// A work queue's consumption, kept alive.
//
// nats.go ends a Consume for good when the server answers a pull with
// "consumer deleted" or "bad request", and says so only to an error
// handler. Without one, a consumer deleted (by an operator, or lost by a
// cluster) left every executor of the node idle, runs queued and nothing
// logged. And a consumer the server no longer serves shows only as missed
// heartbeats (or a pull nobody answers), after which nats.go pulls again
// from the same consumer.
//
// So every error is logged (jsconsume.Logger), and on any of those
// (jsconsume.Lost) the consumer is created again (CreateOrUpdateConsumer: a consumer that still exists is
// kept as it is, with its pending and unacknowledged items) and consumed
// anew, after a pause that doubles while it keeps failing. Items
// delivered before go on: their acknowledgements do not need the
// consumption that delivered them.
type consuming struct {
	q    *queue
	spec port.QueueSpec
	fn   func(port.QueueMsg)
	// ctx ends with stop.
	ctx    context.Context
	cancel context.CancelFunc
	// lost is signalled when the consumption must be made again.
	lost chan struct{}
	mu   sync.Mutex
	cc   jetstream.ConsumeContext
	// old is the consumption keep stopped last: its late errors are not
	// this one's.
	old  jetstream.ConsumeContext
	logs *jsconsume.Logger
}

// The pause before consuming again.
const (
	againFirst = 50 * time.Millisecond
	againMax   = 2 * time.Second
)

// start creates the consumer and consumes it; ctx bounds the creation's
// retries.
func (c *consuming) start(ctx context.Context) error {
	var cons jetstream.Consumer
	err := port.Retry(ctx, c.q.logger, "create the consumer "+c.spec.Name, func(ctx context.Context) error {
		var err error
		cons, err = c.q.js.CreateOrUpdateConsumer(ctx, StreamName, jetstream.ConsumerConfig{
			Durable:       c.spec.Name,
			FilterSubject: c.spec.Filter,
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       c.spec.AckWait,
			MaxAckPending: c.spec.MaxPending,
			DeliverPolicy: jetstream.DeliverAllPolicy,
		})
		return err
	})
	if err != nil {
		return err
	}
	cc, err := cons.Consume(func(m jetstream.Msg) { c.fn(queueMsg{m}) },
		jetstream.PullMaxMessages(c.spec.Batch), jetstream.ConsumeErrHandler(c.failed))
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx.Err() != nil {
		cc.Stop() // stopped meanwhile
		return c.ctx.Err()
	}
	c.cc = cc
	return nil
}

// failed is the Consume's error handler.
func (c *consuming) failed(cc jetstream.ConsumeContext, err error) {
	c.mu.Lock()
	stale := cc != nil && cc == c.old
	c.mu.Unlock()
	if c.ctx.Err() != nil || stale {
		return // stopping, or a late error of a consumption stopped
	}
	lost := jsconsume.Lost(err)
	msg := "work queue"
	if lost {
		msg = "work queue: consuming again"
	}
	c.logs.Log(msg, err, "consumer", c.spec.Name)
	if lost {
		select {
		case c.lost <- struct{}{}:
		default: // already signalled
		}
	}
}

// keep makes the consumption again each time it is lost, until stop.
func (c *consuming) keep() {
	pause, began := againFirst, time.Now()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.lost:
		}
		c.mu.Lock()
		old := c.cc
		c.old = old
		c.mu.Unlock()
		c.stopped(old) // its pull requests end before the new one's begin
		if time.Since(began) > 10*againMax {
			pause = againFirst // the last consumption held a while
		}
		select {
		case <-c.ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, againMax)
		began = time.Now()
		if err := c.start(c.ctx); err != nil {
			return // only when stopped: Retry goes on until its context ends
		}
	}
}

// stop ends the consumption and returns once its subscription is gone.
//
// nats.go's Stop only signals: the subscription is unsubscribed a moment
// later, on another goroutine, and until then the server may hand a
// pending pull request an item. An item a stopping handler hands back
// (Nak) straight after stop would go to that stale pull request, and
// come back only after AckWait. Waiting for Closed puts the unsubscribe
// on the connection first; the server then drops the stale pull and
// hands the item to the next consumer at once.
func (c *consuming) stop() {
	c.cancel()
	c.mu.Lock()
	cc := c.cc
	c.mu.Unlock()
	c.stopped(cc)
}

// stopped stops cc and waits (bounded) until its subscription is gone.
func (c *consuming) stopped(cc jetstream.ConsumeContext) {
	cc.Stop()
	select {
	case <-cc.Closed():
	case <-time.After(stopWait):
		c.q.logger.Warn("work queue: the consumption did not close", "consumer", c.spec.Name, "waited", stopWait)
	}
}

// stopWait bounds how long stop waits for the subscription to close (it
// closes at once unless the connection is stuck).
const stopWait = 5 * time.Second
