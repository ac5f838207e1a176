package service

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/port"
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
func (s *Service) AllowRead(ctx context.Context, keyID string) error {
	_, err := s.allow(ctx, limitRead, keyID)
	return err
}

// AllowReadQuota is AllowRead that also says where the key stands.
func (s *Service) AllowReadQuota(ctx context.Context, keyID string) (Quota, error) {
	return s.allow(ctx, limitRead, keyID)
}

// allow records one request in the key's sliding window (the Windows
// port: exact across every node that shares it). A standalone node counts
// in memory (localWindows): it is the only node, so that count is exact
// too, and a request costs no request to the log. (The shared windows are
// memory streams: a restart forgets them as it forgets these.)
func (s *Service) allow(ctx context.Context, kind limitKind, keyID string) (Quota, error) {
	win, limit := port.WindowCreate, s.cfg.Limits.CreatePerMinute
	if kind == limitRead {
		win, limit = port.WindowRead, s.cfg.Limits.ReadsPerMinute
	}
	if limit <= 0 {
		return Quota{}, nil
	}
	if !s.ports.Log.Available() {
		// As every request does while the log is away, even one that
		// could be counted and answered from this node alone.
		return Quota{}, internal("rate limit", port.ErrUnavailable)
	}
	local := s.creates
	if kind == limitRead {
		local = s.reads
	}
	if local != nil {
		ok, wait, remaining, reset := local.allow(keyID, time.Now())
		if !ok {
			return Quota{Limit: limit, Remaining: 0, Reset: wholeSeconds(wait)}, rateLimited(kind, limit, wait)
		}
		return Quota{Limit: limit, Remaining: remaining, Reset: wholeSeconds(reset)}, nil
	}
	ok, remaining, reset, err := s.ports.Windows.Hit(ctx, win, keyID)
	if err != nil {
		return Quota{}, internal("rate limit", err)
	}
	if !ok {
		if kind == limitCreate {
			s.noteCreatesFull(keyID, time.Now().Add(reset))
		}
		return Quota{Limit: limit, Remaining: 0, Reset: wholeSeconds(reset)}, rateLimited(kind, limit, reset)
	}
	return Quota{Limit: limit, Remaining: remaining, Reset: wholeSeconds(reset)}, nil
}

// CreateWindowFull answers rate_limited, without counting a request, when
// the key's creation window is known to be full: the edge asks it before
// it reads a create's body, so a client past its limit costs no body read.
// A standalone node knows exactly (its windows are in memory); a node on
// a shared log knows what its own last refusal said, until that window's
// oldest create leaves it. A create it lets through is counted as ever,
// after its other checks.
func (s *Service) CreateWindowFull(keyID string) (Quota, error) {
	limit := s.cfg.Limits.CreatePerMinute
	if limit <= 0 {
		return Quota{}, nil
	}
	now := time.Now()
	wait := time.Duration(0)
	if s.creates != nil {
		if full, w := s.creates.full(keyID, now); full {
			wait = w
		}
	} else if until, ok := s.createsFull.Load(keyID); ok {
		if w := until.(time.Time).Sub(now); w > 0 {
			wait = w
		} else {
			s.createsFull.Delete(keyID)
		}
	}
	if wait <= 0 {
		return Quota{}, nil
	}
	return Quota{Limit: limit, Remaining: 0, Reset: wholeSeconds(wait)}, rateLimited(limitCreate, limit, wait)
}

// noteCreatesFull remembers until when key's creation window is full,
// and now and then forgets the keys whose window has room again.
func (s *Service) noteCreatesFull(keyID string, until time.Time) {
	s.createsFull.Store(keyID, until)
	if s.createsNoted.Add(1)%1024 != 0 {
		return
	}
	now := time.Now()
	s.createsFull.Range(func(k, v any) bool {
		if v.(time.Time).Before(now) {
			s.createsFull.Delete(k)
		}
		return true
	})
}

func rateLimited(kind limitKind, limit int, wait time.Duration) error {
	// The wait travels as RetryAfter: each surface shows it its way (a
	// Retry-After header, the seconds in an MCP tool error's text). The
	// message names the limit hit (issue 47: "rate limit exceeded" left a
	// client to guess which).
	what := fmt.Sprintf("the create limit of this API key (%d runs a minute) is reached", limit)
	name := engine.LimitCreatesPerMinute
	if kind == limitRead {
		what = fmt.Sprintf("the read limit of this API key (%d requests a minute) is reached", limit)
		name = engine.LimitReadsPerMinute
	}
	return &engine.Error{Code: engine.CodeRateLimited, RetryAfter: wholeSeconds(wait), Message: what, Limit: name}
}

// wholeSeconds rounds d up to whole seconds, at least one.
func wholeSeconds(d time.Duration) time.Duration {
	s := math.Ceil(d.Seconds())
	if s < 1 {
		s = 1
	}
	return time.Duration(s) * time.Second
}

// localWindows are exact sliding one-minute windows kept in memory, per
// key. A standalone node (embedded NATS with no client port and no
// cluster: no other node can share its log) counts reads in them instead
// of in the shared window stream: the same rule, without a JetStream round
// trip on every read. Like the memory stream they replace, they start
// empty after a restart.
type localWindows struct {
	mu    sync.Mutex
	limit int
	span  time.Duration
	keys  map[string]*hits
	calls int
	// base: hits are kept as offsets from it, which hold no pointer: a
	// key's queue (up to limit entries) is never scanned by the garbage
	// collector, and takes 8 bytes a hit instead of a time.Time's 24.
	base time.Time
}

// hits are the times of counted requests (offsets from base), oldest
// first (a queue).
type hits struct {
	t    []time.Duration
	head int
}

func newLocalWindows(limit int) *localWindows {
	return &localWindows{limit: limit, span: time.Minute, keys: map[string]*hits{}, base: time.Now()}
}

// allow counts one request for key at now, or returns how long until the
// oldest counted one leaves the window. It also returns how many requests
// remain and when the oldest counted one leaves.
func (w *localWindows) allow(key string, now time.Time) (ok bool, wait time.Duration, remaining int, reset time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.calls++; w.calls%4096 == 0 {
		w.sweep(now)
	}
	h := w.keys[key]
	if h == nil {
		h = &hits{}
		w.keys[key] = h
	}
	at := now.Sub(w.base)
	h.expire(at - w.span)
	if len(h.t)-h.head >= w.limit {
		wait := h.t[h.head] + w.span - at
		return false, wait, 0, wait
	}
	if h.head > 0 && h.head >= len(h.t)/2 { // reuse the space of expired hits
		h.t = h.t[:copy(h.t, h.t[h.head:])]
		h.head = 0
	}
	h.t = append(h.t, at)
	return true, 0, w.limit - (len(h.t) - h.head), h.t[h.head] + w.span - at
}

// full says, without counting a request, whether key's window is full at
// now, and how long until its oldest hit leaves it.
func (w *localWindows) full(key string, now time.Time) (bool, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.keys[key]
	if h == nil {
		return false, 0
	}
	at := now.Sub(w.base)
	h.expire(at - w.span)
	if len(h.t)-h.head < w.limit {
		return false, 0
	}
	return true, h.t[h.head] + w.span - at
}

// expire drops the hits at or before the offset before.
func (h *hits) expire(before time.Duration) {
	for h.head < len(h.t) && h.t[h.head] <= before {
		h.head++
	}
}

// sweep forgets keys with nothing left in their window.
func (w *localWindows) sweep(now time.Time) {
	for k, h := range w.keys {
		if h.expire(now.Sub(w.base) - w.span); h.head == len(h.t) {
			delete(w.keys, k)
		}
	}
}
