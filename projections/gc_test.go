package projections

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/apprun/apprun/embednats/natstest"
	"github.com/apprun/apprun/eventlog"
	"github.com/nats-io/nats.go/jetstream"
)

// fakeGC stands in for debug.SetGCPercent and tells each call on calls.
type fakeGC struct {
	mu    sync.Mutex
	cur   int
	calls chan int
}

func watchGC(t *testing.T, start int) *fakeGC {
	f := &fakeGC{cur: start, calls: make(chan int, 16)}
	prev := setGCPercent
	setGCPercent = func(p int) int {
		f.mu.Lock()
		defer f.mu.Unlock()
		old := f.cur
		f.cur = p
		f.calls <- p
		return old
	}
	t.Cleanup(func() { setGCPercent = prev })
	return f
}

func (f *fakeGC) percent() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cur
}

// The collector is relaxed while any store catches up and restored when
// the last one has; a percentage an operator set higher, or off, stays.
// (Not parallel: it replaces the process's setting.)
func TestRelaxingTheCollectorIsHeldByACount(t *testing.T) {
	gc := watchGC(t, 100)
	first, second := relaxGC(), relaxGC()
	if p := gc.percent(); p != catchUpGC {
		t.Fatalf("percentage %d while two stores catch up, want %d", p, catchUpGC)
	}
	first()
	first() // a second call does nothing
	if p := gc.percent(); p != catchUpGC {
		t.Fatalf("percentage %d while one store still catches up, want %d", p, catchUpGC)
	}
	second()
	if p := gc.percent(); p != 100 {
		t.Fatalf("percentage %d after both caught up, want 100 again", p)
	}
	for _, set := range []int{-1, 800} {
		gc := watchGC(t, set)
		relaxGC()()
		if p := gc.percent(); p != set {
			t.Fatalf("percentage %d after a catch-up with GOGC %d, want it kept", p, set)
		}
	}
}

// A store that starts far behind the log relaxes the collector until it
// has caught up; one that starts close to it leaves it alone.
// (Not parallel: it replaces the process's setting and catchUpFrom.)
func TestALongCatchUpRelaxesTheCollectorUntilReady(t *testing.T) {
	gc := watchGC(t, 100)
	defer func(n uint64) { catchUpFrom = n }(catchUpFrom)
	catchUpFrom = 100
	ctx := context.Background()
	nc := natstest.Connect(t, true)
	if _, err := eventlog.Open(ctx, nc, eventlog.Config{}); err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	publish := func(n int) (last uint64) {
		for range n {
			ack, err := js.Publish(ctx, "apprun.slot.1", []byte(`{}`)) // no read model
			if err != nil {
				t.Fatal(err)
			}
			last = ack.Sequence
		}
		return last
	}
	path := filepath.Join(t.TempDir(), "p.db")
	run := func(behind int) (calls []int) {
		last := publish(behind)
		s, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(ctx, js, eventlog.StreamName); err != nil {
			t.Fatal(err)
		}
		if err := s.WaitFor(ctx, last); err != nil {
			t.Fatal(err)
		}
		if len(gc.calls) > 0 { // relaxed (in Start): await the restore
			calls = append(calls, <-gc.calls)
			select {
			case p := <-gc.calls:
				calls = append(calls, p)
			case <-time.After(10 * time.Second):
				t.Fatalf("the collector was relaxed (%v) and not restored once the store was ready", calls)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		for len(gc.calls) > 0 {
			calls = append(calls, <-gc.calls)
		}
		return calls
	}
	if calls := run(150); len(calls) != 2 || calls[0] != catchUpGC || calls[1] != 100 {
		t.Fatalf("a store 150 events behind (from 100 on) set the percentage to %v, want [%d 100]", calls, catchUpGC)
	}
	if calls := run(50); len(calls) != 0 {
		t.Fatalf("a store 50 events behind set the percentage to %v, want it left alone", calls)
	}
}
