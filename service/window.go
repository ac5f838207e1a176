package service

import (
	"sync"
	"time"
)

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
