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

// Quota is where a key stands in the window a request counted against:
// what the RateLimit-* headers say. Limit 0 means no limit was counted;
// Remaining is -1 when it could not be read.
type Quota struct {
	Limit     int
	Remaining int
	// Reset is how long until the oldest counted request leaves the
	// window (and Remaining grows again).
	Reset time.Duration
}

// AllowRead counts one read for an API key against the read limit, or
// answers rate_limited with how long to wait.
func (e *Engine) AllowRead(ctx context.Context, keyID string) error {
	_, err := e.allow(ctx, limitRead, keyID)
	return err
}

// AllowReadQuota is AllowRead that also says where the key stands.
func (e *Engine) AllowReadQuota(ctx context.Context, keyID string) (Quota, error) {
	return e.allow(ctx, limitRead, keyID)
}

// allow records one request in the key's sliding window. The window is a
// memory stream that keeps at most `limit` messages per key for one minute
// and refuses more (discard-new per subject), so the count is exact across
// every node that shares the stream, with no read-modify-write race. A
// standalone node counts reads in memory (localWindows): it is the only
// node, so that count is exact too, and a read costs no JetStream request.
func (e *Engine) allow(ctx context.Context, kind limitKind, keyID string) (Quota, error) {
	stream, subj, limit := streamRLCreate, subjRLC, e.cfg.Limits.CreatePerMinute
	if kind == limitRead {
		stream, subj, limit = streamRLRead, subjRLR, e.cfg.Limits.ReadsPerMinute
	}
	if limit <= 0 {
		return Quota{}, nil
	}
	if !e.nc.IsConnected() {
		return Quota{}, errUnavailable // as every request does while the log is away
	}
	if kind == limitRead && e.reads != nil {
		ok, wait, remaining, reset := e.reads.allow(keyID, time.Now())
		if !ok {
			return Quota{Limit: limit, Remaining: 0, Reset: wholeSeconds(wait)}, rateLimited(wait)
		}
		return Quota{Limit: limit, Remaining: remaining, Reset: wholeSeconds(reset)}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	_, err := e.log.js.Publish(ctx, subj+keyID, nil)
	if err == nil {
		return e.quotaOf(ctx, stream, subj+keyID, limit), nil
	}
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != jsErrMaxMsgsPerSubj {
		return Quota{}, internal("rate limit", err)
	}
	wait := time.Second
	if st := e.windows[stream]; st != nil {
		if oldest, err := st.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(subj+keyID)); err == nil {
			wait = time.Until(oldest.Time.Add(time.Minute))
		}
	}
	return Quota{Limit: limit, Remaining: 0, Reset: wholeSeconds(wait)}, rateLimited(wait)
}

// quotaOf reads a key's place in a window stream: how many requests it
// holds and when the oldest leaves (best effort: -1 when unreadable).
func (e *Engine) quotaOf(ctx context.Context, stream, subject string, limit int) Quota {
	q := Quota{Limit: limit, Remaining: -1}
	st := e.windows[stream]
	if st == nil {
		return q
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return q
	}
	q.Remaining = max(limit-int(info.State.Subjects[subject]), 0)
	if oldest, err := st.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(subject)); err == nil {
		q.Reset = wholeSeconds(time.Until(oldest.Time.Add(time.Minute)))
	}
	return q
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
