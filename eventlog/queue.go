package eventlog

import (
	"context"
	"log/slog"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/nats-io/nats.go/jetstream"
)

// queue is engine.Queue on durable pull consumers of the event log stream:
// every node consumes the same consumer, so an item goes to one at a time.
type queue struct {
	js     jetstream.JetStream
	logger *slog.Logger
}

func (q *queue) Consume(ctx context.Context, spec engine.QueueSpec, fn func(engine.QueueMsg)) (func(), error) {
	var cons jetstream.Consumer
	err := engine.Retry(ctx, q.logger, "create the consumer "+spec.Name, func(ctx context.Context) error {
		var err error
		cons, err = q.js.CreateOrUpdateConsumer(ctx, StreamName, jetstream.ConsumerConfig{
			Durable:       spec.Name,
			FilterSubject: spec.Filter,
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       spec.AckWait,
			MaxAckPending: spec.MaxPending,
			DeliverPolicy: jetstream.DeliverAllPolicy,
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	cc, err := cons.Consume(func(m jetstream.Msg) { fn(queueMsg{m}) }, jetstream.PullMaxMessages(spec.Batch))
	if err != nil {
		return nil, err
	}
	return cc.Stop, nil
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
