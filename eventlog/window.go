package eventlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apprun/apprun/port"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// windows is engine.Windows on memory streams that keep at most `limit`
// messages per key for one minute and refuse more (discard-new per
// subject), so the count is exact across every node that shares them,
// with no read-modify-write race. A server that restarts loses them; they
// are made again (windowmend.go).
type windows struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	cfg     Config
	configs []jetstream.StreamConfig // the windows that are on
	timeout time.Duration
	limits  map[port.Window]int
	mends   mends
}

func newWindows(nc *nats.Conn, js jetstream.JetStream, cfg Config, reconnects uint64) *windows {
	w := &windows{nc: nc, js: js, cfg: cfg, configs: windowConfigs(cfg), timeout: cfg.Timeout,
		limits: map[port.Window]int{port.WindowCreate: cfg.Limits.CreatePerMinute, port.WindowRead: cfg.Limits.ReadsPerMinute}}
	w.mends.checked.Store(reconnects)
	return w
}

func (w *windows) Hit(ctx context.Context, win port.Window, key string) (bool, int, time.Duration, error) {
	stream, subj := streamRLCreate, subjRLC
	if win == port.WindowRead {
		stream, subj = streamRLRead, subjRLR
	}
	limit := w.limits[win]
	if !w.nc.IsConnected() {
		return false, 0, 0, errNotConnected
	}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	_, err := w.js.Publish(ctx, subj+key, nil)
	if missing(err) { // lost with a server that restarted: made again, then tried once more
		if err := w.mend(ctx); err != nil {
			return false, 0, 0, fmt.Errorf("%w: rate limit: %w", port.ErrUnavailable, err)
		}
		_, err = w.js.Publish(ctx, subj+key, nil)
	}
	if err == nil { // where the key stands: best effort, -1 when unreadable
		at, count, err := w.oldest(ctx, stream, subj+key)
		if err != nil {
			return true, -1, 0, nil
		}
		return true, max(limit-count, 0), time.Until(at.Add(time.Minute)), nil
	}
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != jsErrMaxMsgsPerSubj {
		return false, 0, 0, fmt.Errorf("%w: rate limit: %w", port.ErrUnavailable, err)
	}
	wait := time.Second
	if at, _, err := w.oldest(ctx, stream, subj+key); err == nil {
		wait = time.Until(at.Add(time.Minute))
	}
	return false, 0, wait, nil
}

// oldest reads a key's oldest counted request: when it was made, and how
// many requests the key has in the window. It is one direct get of that
// request as a batch of one, whose end of batch also counts the rest
// (Nats-Num-Pending): any replica answers it at once, where a stream info
// with a subject filter waits its turn in the JetStream API's one queue
// (on a cluster it cost a create 20 ms).
func (w *windows) oldest(ctx context.Context, stream, subject string) (time.Time, int, error) {
	var at time.Time
	n, pending, err := directBatch(ctx, w.nc, stream, subject, 1, 1, func(m *nats.Msg) (err error) {
		at, err = time.Parse(time.RFC3339Nano, m.Header.Get(jetstream.TimeStampHeaer))
		return err
	})
	if err == nil && n == 0 {
		err = errors.New("no request counted: the window is empty")
	}
	return at, n + int(pending), err
}
