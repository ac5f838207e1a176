package audit

import (
	"context"
	"testing"
	"time"

	"github.com/apprun/apprun/embednats/natstest"
	"github.com/nats-io/nats.go/jetstream"
)

// The audit's read of the log ends with its context, or with an error,
// when the log goes away under it: it never waits for good. The ordered
// consumer it read with was made again before every batch of 500, with
// unbounded retries that no context reaches: after a 30-minute soak on a
// cluster, `apprun audit` sat in epoll_wait until the soak killed it at
// 10 minutes (issue 50). Here the stream is deleted after the first
// message: the read must end, with an error, well within its context.
func TestAFetchEndsWhenTheLogGoesAway(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	js, err := jetstream.New(natstest.Connect(t, false))
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "GOES", Subjects: []string{"goes.>"}})
	if err != nil {
		t.Fatal(err)
	}
	const total = 3000
	for i := range total {
		if _, err := js.PublishAsync("goes.x", []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	<-js.PublishAsyncComplete()

	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		deleted := false
		n, err := fetchFrom(rctx, st, "", 1, total, func(uint64, jetstream.Msg) {
			if !deleted {
				deleted = true
				if err := js.DeleteStream(ctx, "GOES"); err != nil {
					t.Error(err)
				}
			}
		})
		done <- result{n, err}
	}()
	select {
	case r := <-done:
		if r.err == nil && r.n == total {
			t.Fatalf("read all %d messages of a deleted stream", total)
		}
		t.Logf("read %d of %d, then: %v", r.n, total, r.err)
	case <-time.After(time.Minute):
		t.Fatal("the read of a deleted stream did not end within a minute (its context: 20 s)")
	}
}
