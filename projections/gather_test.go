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

// After a quiet spell (no wait) a transaction takes what is queued and
// does not wait for more.
func TestGatherTakesWhatIsQueued(t *testing.T) {
	t.Parallel()
	in := make(chan event, 8)
	for _, ev := range events(3)[1:] {
		in <- ev
	}
	got := gather(in, nil, nil, events(1)[0], 0, 10)
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
	got := gather(in, nil, nil, events(1)[0], time.Hour, 4)
	if len(got) != 4 || got[3].seq != 4 {
		t.Fatalf("gathered %+v, want 4 events (the most), the ones that arrived while it waited", got)
	}
}

// A wait ends with its time, with what came.
func TestGatherEndsWithItsWait(t *testing.T) {
	t.Parallel()
	got := gather(make(chan event), nil, nil, events(1)[0], time.Millisecond, 10)
	if len(got) != 1 {
		t.Fatalf("gathered %+v, want the first alone", got)
	}
}

// Stopping ends a wait: nothing is applied.
func TestGatherStopsWhenDone(t *testing.T) {
	t.Parallel()
	done := make(chan struct{})
	close(done)
	if got := gather(make(chan event), done, nil, events(1)[0], time.Hour, 10); got != nil {
		t.Fatalf("gathered %+v after stopping, want nil", got)
	}
}

// A reader that waits ends the wait: what has come is committed at once.
func TestGatherEndsWhenAReaderWaits(t *testing.T) {
	t.Parallel()
	wake := make(chan struct{}, 1)
	wake <- struct{}{}
	if got := gather(make(chan event), nil, wake, events(1)[0], time.Hour, 10); len(got) != 1 {
		t.Fatalf("gathered %+v, want the first, at once", got)
	}
}

// A WaitFor that must wait wakes the applier (so it commits at once) and
// is counted until it returns.
func TestWaitForWakesTheApplier(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "p.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.WaitFor(context.Background(), 0); err != nil || s.waiting.Load() != 0 || len(s.wake) != 0 {
		t.Fatalf("a wait already satisfied: %v, waiting %d, wake %d; want none", err, s.waiting.Load(), len(s.wake))
	}
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan error)
	go func() { returned <- s.WaitFor(ctx, 5) }()
	<-s.wake
	if n := s.waiting.Load(); n != 1 {
		t.Fatalf("waiting %d while one WaitFor waits, want 1", n)
	}
	cancel()
	if err := <-returned; !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitFor after cancel: %v", err)
	}
	if n := s.waiting.Load(); n != 0 {
		t.Fatalf("waiting %d after it returned, want 0", n)
	}
}
