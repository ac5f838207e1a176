package eventlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// windows is engine.Windows on memory streams that keep at most `limit`
// messages per key for one minute and refuse more (discard-new per
// subject), so the count is exact across every node that shares them,
// with no read-modify-write race.
type windows struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	timeout time.Duration
	streams map[string]jetstream.Stream
	limits  map[engine.Window]int
}

func (w *windows) Hit(ctx context.Context, win engine.Window, key string) (bool, int, time.Duration, error) {
	stream, subj := streamRLCreate, subjRLC
	if win == engine.WindowRead {
		stream, subj = streamRLRead, subjRLR
	}
	limit := w.limits[win]
	if !w.nc.IsConnected() {
		return false, 0, 0, errNotConnected
	}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	_, err := w.js.Publish(ctx, subj+key, nil)
	if err == nil {
		remaining, reset := w.quotaOf(ctx, stream, subj+key, limit)
		return true, remaining, reset, nil
	}
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != jsErrMaxMsgsPerSubj {
		return false, 0, 0, fmt.Errorf("%w: rate limit: %w", engine.ErrUnavailable, err)
	}
	wait := time.Second
	if st := w.streams[stream]; st != nil {
		if oldest, err := st.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(subj+key)); err == nil {
			wait = time.Until(oldest.Time.Add(time.Minute))
		}
	}
	return false, 0, wait, nil
}

// quotaOf reads a key's place in a window stream: how many requests it
// has left and when the oldest leaves (best effort: -1 when unreadable).
func (w *windows) quotaOf(ctx context.Context, stream, subject string, limit int) (int, time.Duration) {
	st := w.streams[stream]
	if st == nil {
		return -1, 0
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return -1, 0
	}
	remaining := max(limit-int(info.State.Subjects[subject]), 0)
	var reset time.Duration
	if oldest, err := st.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(subject)); err == nil {
		reset = time.Until(oldest.Time.Add(time.Minute))
	}
	return remaining, reset
}
