package eventlog_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/embednats/natstest"
	"github.com/apprun/apprun/eventlog"
	"github.com/apprun/apprun/internal/logbuf"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/subjects"
	"github.com/nats-io/nats.go/jetstream"
)

// A queue whose consumer goes away (deleted by an operator, or lost by a
// cluster) takes work again: nats.go ends a Consume for good when the
// server says its consumer was deleted, and the executors then sat idle
// with runs queued and nothing logged. It says what happened, too.
func TestAQueueWhoseConsumerIsDeletedConsumesAgain(t *testing.T) {
	t.Parallel()
	nc := natstest.Connect(t, false)
	var logs logbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := eventlog.Open(ctx, nc, eventlog.Config{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 16)
	spec := port.QueueSpec{Name: "q", Filter: subjects.Of(subjects.KindJob, "*"), AckWait: 30 * time.Second, MaxPending: 16, Batch: 4}
	stop, err := st.Ports().Queue.Consume(ctx, spec, func(m port.QueueMsg) {
		m.Ack()
		got <- string(m.Data())
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	job := func(name string) {
		t.Helper()
		if _, err := st.Log().Append(ctx, port.Entry{Subject: subjects.Of(subjects.KindJob, name), Data: []byte(name)}); err != nil {
			t.Fatal(err)
		}
	}
	// await waits for want. A consumer created again starts from the
	// first item the stream holds, as one created at a node's first start
	// does: an item already done comes again (the executor finds its run
	// ended and acknowledges it).
	await := func(want string) {
		t.Helper()
		for {
			select {
			case g := <-got:
				if g == want {
					return
				}
			case <-ctx.Done():
				t.Fatalf("%q was never consumed; log:\n%s", want, logs.String())
			}
		}
	}
	job("before")
	await("before")

	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteConsumer(ctx, eventlog.StreamName, "q"); err != nil {
		t.Fatal(err)
	}
	job("after")
	await("after")
	if !strings.Contains(logs.String(), "consumer deleted") {
		t.Errorf("nothing logged of the deleted consumer:\n%s", logs.String())
	}
}
