package eventlog

import (
	"context"
	"log/slog"
	"time"

	"github.com/apprun/apprun/internal/jsconsume"
	"github.com/apprun/apprun/port"
	"github.com/nats-io/nats.go/jetstream"
)

// queue is engine.Queue on durable pull consumers of the event log stream:
// every node consumes the same consumer, so an item goes to one at a time.
type queue struct {
	js     jetstream.JetStream
	logger *slog.Logger
}

// Consume creates the consumer (retrying while JetStream is not ready, for
// as long as ctx allows) and consumes it until stop is called, creating it
// and consuming it again whenever the consumption is lost (consuming.go).
func (q *queue) Consume(ctx context.Context, spec port.QueueSpec, fn func(port.QueueMsg)) (func(), error) {
	c := &consuming{q: q, spec: spec, fn: fn, lost: make(chan struct{}, 1), logs: jsconsume.NewLogger(q.logger)}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if err := c.start(ctx); err != nil {
		c.cancel()
		return nil, err
	}
	go c.keep()
	return c.stop, nil
}

type queueMsg struct{ m jetstream.Msg }

func (q queueMsg) Subject() string { return q.m.Subject() }
func (q queueMsg) Data() []byte    { return q.m.Data() }
func (q queueMsg) Attempt() uint64 {
	if md, err := q.m.Metadata(); err == nil {
		return md.NumDelivered
	}
	return 1
}
func (q queueMsg) Ack()  { _ = q.m.Ack() }
func (q queueMsg) Term() { _ = q.m.Term() }
func (q queueMsg) Nak(delay time.Duration) {
	if delay <= 0 {
		_ = q.m.Nak()
		return
	}
	_ = q.m.NakWithDelay(delay)
}
func (q queueMsg) InProgress() { _ = q.m.InProgress() }
