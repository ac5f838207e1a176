package web

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A reservation takes a try from every budget or from none, a refund
// gives it back, and a budget refills at burst per 5 minutes.
func TestThrottleReservesAtomicallyAndRefills(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	th := newThrottle(func() time.Time { return now })
	pair, ip := budget{"pair", 2}, budget{"ip", 3}
	if !th.reserve(pair, ip) || !th.reserve(pair, ip) {
		t.Fatal("the first two tries were refused")
	}
	if th.reserve(pair, ip) {
		t.Fatal("a third try passed a budget of 2")
	}
	if !th.reserve(ip) {
		t.Fatal("the refused reservation took from the other budget (all or none)")
	}
	th.refund(pair)
	if !th.reserve(pair) {
		t.Fatal("a refunded try was not given back")
	}
	now = now.Add(150 * time.Second) // one try per 5 min / 2
	if !th.reserve(pair) || th.reserve(pair) {
		t.Fatal("the budget did not regain exactly one try in 150 s")
	}
}

// No more than hashSlots password checks run at once; one that cannot get
// a place in time is told the node is busy.
func TestHashingIsBoundedPerNode(t *testing.T) {
	t.Parallel()
	s := &Site{hashSlots: make(chan struct{}, hashSlots)}
	var running, most atomic.Int32
	var wg sync.WaitGroup
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = s.hashing(context.Background(), func() error {
				n := running.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(5 * time.Millisecond) // stands for bcrypt's work
				running.Add(-1)
				return nil
			})
		}()
	}
	wg.Wait()
	if most.Load() > hashSlots {
		t.Fatalf("%d password checks at once, want at most %d", most.Load(), hashSlots)
	}
	for range hashSlots {
		s.hashSlots <- struct{}{} // every place taken
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.hashing(ctx, func() error { return nil }); err != errHashBusy {
		t.Fatalf("with every place taken: %v, want errHashBusy", err)
	}
}
