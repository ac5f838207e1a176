package projections

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func events(n int) []event {
	out := make([]event, n)
	for i := range out {
		out[i] = event{seq: uint64(i + 1)}
	}
	return out
}

func buf(n int) []event { return make([]event, 0, n) }

// After a quiet spell (no wait) a transaction takes what is queued and
// does not wait for more.
func TestGatherTakesWhatIsQueued(t *testing.T) {
	t.Parallel()
	in := make(chan event, 8)
	for _, ev := range events(3)[1:] {
		in <- ev
	}
	got := gather(in, nil, newWaits(), events(1)[0], 0, buf(10))
	if len(got) != 3 || got[2].seq != 3 {
		t.Fatalf("gathered %+v, want the first and the 2 queued", got)
	}
}

// While it waits, it takes the events that arrive, until the batch is full.
func TestGatherWaitsForMoreUntilFull(t *testing.T) {
	t.Parallel()
	in := make(chan event)
	go func() {
		for _, ev := range events(5)[1:] {
			in <- ev // unbuffered: each arrives while gather waits
		}
	}()
	got := gather(in, nil, newWaits(), events(1)[0], time.Hour, buf(4))
	if len(got) != 4 || got[3].seq != 4 {
		t.Fatalf("gathered %+v, want 4 events (the most), the ones that arrived while it waited", got)
	}
}

// A wait ends with its time, with what came.
func TestGatherEndsWithItsWait(t *testing.T) {
	t.Parallel()
	got := gather(make(chan event), nil, newWaits(), events(1)[0], time.Millisecond, buf(10))
	if len(got) != 1 {
		t.Fatalf("gathered %+v, want the first alone", got)
	}
}

// Stopping ends a wait: nothing is applied.
func TestGatherStopsWhenDone(t *testing.T) {
	t.Parallel()
	done := make(chan struct{})
	close(done)
	if got := gather(make(chan event), done, newWaits(), events(1)[0], time.Hour, buf(10)); got != nil {
		t.Fatalf("gathered %+v after stopping, want nil", got)
	}
}

// A reader's wait ends the gathering when the event it waits for arrives,
// and not before: a commit short of it would only cost a transaction.
func TestGatherEndsWithTheEventAReaderWaitsFor(t *testing.T) {
	t.Parallel()
	w := newWaits()
	w.add(3)
	in := make(chan event)
	go func() {
		for _, ev := range events(3)[1:] {
			in <- ev
		}
	}()
	got := gather(in, nil, w, events(1)[0], time.Hour, buf(10))
	if len(got) != 3 || got[2].seq != 3 {
		t.Fatalf("gathered %+v, want events 1 to 3: on until the waited event, then at once", got)
	}
}

// A reader that begins to wait for an event already gathered ends the
// wait at once.
func TestGatherEndsWhenAReaderWaitsForWhatIsHere(t *testing.T) {
	t.Parallel()
	w := newWaits()
	in := make(chan event)
	got := make(chan []event)
	go func() { got <- gather(in, nil, w, events(1)[0], time.Hour, buf(10)) }()
	in <- events(2)[1] // received: gather is waiting
	w.add(2)
	if b := <-got; len(b) != 2 || b[1].seq != 2 {
		t.Fatalf("gathered %+v, want events 1 and 2, at once", b)
	}
}

// The lowest waited event is tracked as readers come and go.
func TestWaitsTrackTheLowestWaitedEvent(t *testing.T) {
	t.Parallel()
	w := newWaits()
	step := func(what string, want uint64) {
		t.Helper()
		if got := w.lowest.Load(); got != want {
			t.Fatalf("after %s: lowest %d, want %d", what, got, want)
		}
	}
	step("nothing", 0)
	if w.reached(1 << 62) {
		t.Fatal("reached with no reader waiting")
	}
	w.add(5)
	w.add(3)
	w.add(3)
	step("waits for 5, 3, 3", 3)
	if w.reached(2) || !w.reached(3) || !w.reached(4) {
		t.Fatal("reached: want false below 3, true from 3 on")
	}
	w.remove(3)
	step("one of the 3s left", 3)
	w.remove(3)
	step("both 3s left", 5)
	w.remove(5)
	step("all left", 0)
}

// A WaitFor that must wait registers its event (and wakes the applier)
// until it returns.
func TestWaitForRegistersItsEvent(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "p.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.WaitFor(context.Background(), 0); err != nil || s.waits.lowest.Load() != 0 || len(s.waits.wake) != 0 {
		t.Fatalf("a wait already satisfied: %v, lowest %d, wake %d; want none", err, s.waits.lowest.Load(), len(s.waits.wake))
	}
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan error)
	go func() { returned <- s.WaitFor(ctx, 5) }()
	<-s.waits.wake
	if n := s.waits.lowest.Load(); n != 5 {
		t.Fatalf("lowest waited event %d while one WaitFor waits for 5, want 5", n)
	}
	cancel()
	if err := <-returned; !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitFor after cancel: %v", err)
	}
	if n := s.waits.lowest.Load(); n != 0 {
		t.Fatalf("lowest %d after it returned, want 0", n)
	}
}
