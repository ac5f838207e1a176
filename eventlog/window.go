package eventlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
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
// It is one direct get of the key's oldest request as a batch of one,
// whose answer also counts the key's requests (Nats-Num-Pending): any
// replica answers it at once, where a stream info with a subject filter
// waits its turn in the JetStream API's one queue (on a cluster it cost
// a create 20 ms).
func (w *windows) quotaOf(ctx context.Context, stream, subject string, limit int) (int, time.Duration) {
	req, err := json.Marshal(struct {
		Seq     uint64 `json:"seq"`
		NextFor string `json:"next_by_subj"`
		Batch   int    `json:"batch"`
	}{1, subject, 1})
	if err != nil {
		return -1, 0
	}
	ch := make(chan *nats.Msg, 4)
	inbox := w.nc.NewRespInbox()
	sub, err := w.nc.ChanSubscribe(inbox, ch)
	if err != nil {
		return -1, 0
	}
	defer sub.Unsubscribe()
	if err := w.nc.PublishRequest("$JS.API.DIRECT.GET."+stream, inbox, req); err != nil {
		return -1, 0
	}
	select {
	case m := <-ch:
		if m.Header.Get("Status") != "" {
			return -1, 0 // 404: the request counted has already left
		}
		pending, err1 := strconv.ParseUint(m.Header.Get("Nats-Num-Pending"), 10, 64)
		ts, err2 := time.Parse(time.RFC3339Nano, m.Header.Get(jetstream.TimeStampHeaer))
		if err1 != nil || err2 != nil {
			return -1, 0
		}
		return max(limit-int(pending)-1, 0), time.Until(ts.Add(time.Minute))
	case <-ctx.Done():
		return -1, 0
	}
}
