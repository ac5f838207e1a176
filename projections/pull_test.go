package projections

import "testing"

// The log's consumer pulls at least 16 MiB at a time, and always more than
// twice the largest message its server takes: a message larger than the
// whole pull would never be delivered, and the read models would stop.
func TestTheReplayPullHoldsTheLargestMessage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ maxPayload, want int64 }{
		{1 << 20, 16 << 20},   // nats-server's default max_payload
		{8 << 20, 16 << 20},   // the most it recommends
		{64 << 20, 128 << 20}, // the most it allows
	} {
		if got := int64(ReplayPull(c.maxPayload)); got != c.want {
			t.Errorf("max_payload %d: pull %d bytes, want %d", c.maxPayload, got, c.want)
		}
	}
}
