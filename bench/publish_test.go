package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The bench's writers wait for their acknowledgements when too many are
// outstanding instead of failing: here the client may have one
// outstanding and waits for room at most a microsecond, so nearly every
// publish would be refused as stalled; all are stored.
func TestPublishWaitingNeverFailsForAStall(t *testing.T) {
	t.Parallel()
	err := withNATS(t.TempDir(), false, func(nc *nats.Conn) error {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(1))
		if err != nil {
			return err
		}
		st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "STALL", Subjects: []string{"stall.>"}})
		if err != nil {
			return err
		}
		const n = 300
		for i := range n {
			if err := publishWaiting(ctx, js, fmt.Sprintf("stall.%d", i), []byte("x"), jetstream.WithStallWait(time.Microsecond)); err != nil {
				return fmt.Errorf("publish %d: %w", i, err)
			}
		}
		select {
		case <-js.PublishAsyncComplete():
		case <-ctx.Done():
			return ctx.Err()
		}
		info, err := st.Info(ctx)
		if err != nil {
			return err
		}
		if info.State.Msgs != n {
			return fmt.Errorf("%d messages stored, want %d", info.State.Msgs, n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
