package engine

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

type limitKind int

const (
	limitCreate limitKind = iota
	limitRead
)

// AllowRead counts one read for an API key against the read limit, or
// answers rate_limited with how long to wait.
func (e *Engine) AllowRead(ctx context.Context, keyID string) error {
	return e.allow(ctx, limitRead, keyID)
}

// allow records one request in the key's sliding window. The window is a
// memory stream that keeps at most `limit` messages per key for one minute
// and refuses more (discard-new per subject), so the count is exact across
// every node that shares the stream, with no read-modify-write race. A
// standalone node counts reads in memory (localWindows): it is the only
// node, so that count is exact too, and a read costs no JetStream request.
func (e *Engine) allow(ctx context.Context, kind limitKind, keyID string) error {
	stream, subj, limit := streamRLCreate, subjRLC, e.cfg.Limits.CreatePerMinute
	if kind == limitRead {
		stream, subj, limit = streamRLRead, subjRLR, e.cfg.Limits.ReadsPerMinute
	}
	if limit <= 0 {
		return nil
	}
	if !e.nc.IsConnected() {
		return errUnavailable // as every request does while the log is away
	}
	if kind == limitRead && e.reads != nil {
		if ok, wait := e.reads.allow(keyID, time.Now()); !ok {
			return rateLimited(wait)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	_, err := e.log.js.Publish(ctx, subj+keyID, nil)
	if err == nil {
		return nil
	}
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != jsErrMaxMsgsPerSubj {
		return internal("rate limit", err)
	}
	wait := time.Second
	if st := e.windows[stream]; st != nil {
		if oldest, err := st.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(subj+keyID)); err == nil {
			wait = time.Until(oldest.Time.Add(time.Minute))
		}
	}
	return rateLimited(wait)
}

func rateLimited(wait time.Duration) error {
	return &Error{Code: CodeRateLimited, RetryAfter: wholeSeconds(wait),
		Message: "rate limit exceeded; retry after the number of seconds in Retry-After"}
}

// wholeSeconds rounds d up to whole seconds, at least one.
func wholeSeconds(d time.Duration) time.Duration {
	s := math.Ceil(d.Seconds())
	if s < 1 {
		s = 1
	}
	return time.Duration(s) * time.Second
}
