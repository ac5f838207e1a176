package engine

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
}

// hits are the times of counted requests, oldest first (a queue).
type hits struct {
	t    []time.Time
	head int
}

func newLocalWindows(limit int) *localWindows {
	return &localWindows{limit: limit, span: time.Minute, keys: map[string]*hits{}}
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
	h.expire(now.Add(-w.span))
	if len(h.t)-h.head >= w.limit {
		wait := h.t[h.head].Add(w.span).Sub(now)
		return false, wait, 0, wait
	}
	if h.head > 0 && h.head >= len(h.t)/2 { // reuse the space of expired hits
		h.t = h.t[:copy(h.t, h.t[h.head:])]
		h.head = 0
	}
	h.t = append(h.t, now)
	return true, 0, w.limit - (len(h.t) - h.head), h.t[h.head].Add(w.span).Sub(now)
}

func (h *hits) expire(before time.Time) {
	for h.head < len(h.t) && !h.t[h.head].After(before) {
		h.head++
	}
}

// sweep forgets keys with nothing left in their window.
func (w *localWindows) sweep(now time.Time) {
	for k, h := range w.keys {
		if h.expire(now.Add(-w.span)); h.head == len(h.t) {
			delete(w.keys, k)
		}
	}
}
