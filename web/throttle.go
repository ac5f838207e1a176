package web

import (
	"context"
	"errors"
	"sync"
	"time"
)

// throttle keeps try budgets by name: a budget holds `burst` tries and
// regains one every 5 minutes / burst. Names idle for an hour are
// forgotten. It is per node: on a cluster each node keeps its own.
type throttle struct {
	mu  sync.Mutex
	now func() time.Time
	by  map[string]*bucket
}

// budget names a budget and its size.
type budget struct {
	name  string
	burst int
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newThrottle(now func() time.Time) *throttle {
	return &throttle{now: now, by: map[string]*bucket{}}
}

// refill brings b's tokens up to now.
func (b budget) refill(k *bucket, now time.Time) {
	every := 5 * time.Minute / time.Duration(b.burst)
	k.tokens = min(float64(b.burst), k.tokens+float64(now.Sub(k.at))/float64(every))
	k.at = now
}

func (t *throttle) bucket(b budget, now time.Time) *bucket {
	if len(t.by) > 100_000 {
		for name, k := range t.by {
			if now.Sub(k.at) > time.Hour {
				delete(t.by, name)
			}
		}
	}
	k, ok := t.by[b.name]
	if !ok {
		k = &bucket{tokens: float64(b.burst), at: now}
		t.by[b.name] = k
	}
	b.refill(k, now)
	return k
}

// reserve takes one try from every budget, or from none when any is
// empty: one atomic step, so concurrent tries cannot all pass a check
// made before any of them counts.
func (t *throttle) reserve(budgets ...budget) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	ks := make([]*bucket, len(budgets))
	for i, b := range budgets {
		if ks[i] = t.bucket(b, now); ks[i].tokens < 1 {
			return false
		}
	}
	for _, k := range ks {
		k.tokens--
	}
	return true
}

// refund gives back a reserved try (a right password, a busy node).
func (t *throttle) refund(budgets ...budget) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	for _, b := range budgets {
		k := t.bucket(b, now)
		k.tokens = min(float64(b.burst), k.tokens+1)
	}
}

// hashSlots bounds the password hashing (bcrypt, about 50 ms of a core
// each) a node does at once, and hashWait how long a sign-in waits for a
// place before it is told to come back.
const (
	hashSlots = 2
	hashWait  = 5 * time.Second
)

var errHashBusy = errors.New("web: password hashing is busy")

// hashing runs fn, which hashes or checks a password, in one of the
// node's hashSlots places.
func (s *Site) hashing(ctx context.Context, fn func() error) error {
	ctx, cancel := context.WithTimeout(ctx, hashWait)
	defer cancel()
	select {
	case s.hashSlots <- struct{}{}:
	case <-ctx.Done():
		return errHashBusy
	}
	defer func() { <-s.hashSlots }()
	return fn()
}
