package worker_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apprun/apprun/embednats/natstest"
	"github.com/apprun/apprun/eventlog"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service/worker"
	"github.com/apprun/apprun/subjects"
)

// queue is a JetStream work queue on an embedded server, and a way to put
// items on it.
func queue(t *testing.T) (port.Queue, func(name string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := eventlog.Open(ctx, natstest.Connect(t, false), eventlog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	put := func(name string) {
		t.Helper()
		if _, err := st.Log().Append(context.Background(), port.Entry{Subject: subjects.Job(name), Data: []byte(name)}); err != nil {
			t.Fatal(err)
		}
	}
	return st.Ports().Queue, put
}

func spec() port.QueueSpec {
	return port.QueueSpec{Name: "w", Filter: subjects.JobPrefix + "*", AckWait: 30 * time.Second, MaxPending: 64, Batch: 8}
}

// An item is done once (Done), again after the delay (Retry), or never
// again (Drop), as its handler says; at most Slots run at once, and Busy
// says how many.
func TestAPoolDoesItemsAsTheirHandlerSays(t *testing.T) {
	t.Parallel()
	q, put := queue(t)
	var mu sync.Mutex
	seen := map[string][]uint64{} // item → attempts seen
	var running, most atomic.Int32
	release := make(chan struct{})
	var pool *worker.Pool
	handler := func(ctx context.Context, m port.QueueMsg) worker.Outcome {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			if cur := most.Load(); n <= cur || most.CompareAndSwap(cur, n) {
				break
			}
		}
		if b := pool.Busy(); b < 1 || b > 2 {
			t.Errorf("Busy %d while an item runs, with 2 slots", b)
		}
		<-release
		name := string(m.Data())
		mu.Lock()
		seen[name] = append(seen[name], m.Attempt())
		mu.Unlock()
		switch {
		case name == "retry" && m.Attempt() == 1:
			return worker.Retry(10 * time.Millisecond)
		case name == "drop":
			return worker.Drop()
		}
		return worker.Done()
	}
	var err error
	started := make(chan struct{})
	pool, err = worker.Start(context.Background(), q, worker.Config{Spec: spec(), Slots: 2}, func(ctx context.Context, m port.QueueMsg) worker.Outcome {
		<-started
		return handler(ctx, m)
	})
	if err != nil {
		t.Fatal(err)
	}
	close(started)
	defer pool.Stop()
	for _, n := range []string{"a", "b", "c", "retry", "drop"} {
		put(n)
	}
	close(release)
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		done := len(seen["a"]) == 1 && len(seen["b"]) == 1 && len(seen["c"]) == 1 && len(seen["retry"]) == 2 && len(seen["drop"]) == 1
		mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			mu.Lock()
			t.Fatalf("after 20 s the items were seen %v", seen)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Nothing comes again: give a redelivery its chance (the retry came
	// back after 10 ms), then look.
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	for n, attempts := range seen {
		if want := map[string]int{"retry": 2}[n]; len(attempts) != max(want, 1) {
			t.Errorf("%s was done %d times (%v)", n, len(attempts), attempts)
		}
	}
	if m := most.Load(); m > 2 {
		t.Errorf("%d items ran at once with 2 slots", m)
	}
}

// Stop ends the handlers' context and waits for them: nothing runs after
// it returns, and an item it interrupted comes back to the next consumer.
func TestStopEndsAndAwaitsTheHandlers(t *testing.T) {
	t.Parallel()
	q, put := queue(t)
	began := make(chan struct{}, 1)
	var returned atomic.Bool
	pool, err := worker.Start(context.Background(), q, worker.Config{Spec: spec(), Slots: 1, Heartbeat: 10 * time.Millisecond},
		func(ctx context.Context, m port.QueueMsg) worker.Outcome {
			began <- struct{}{}
			<-ctx.Done()
			returned.Store(true)
			return worker.Retry(0)
		})
	if err != nil {
		t.Fatal(err)
	}
	put("long")
	select {
	case <-began:
	case <-time.After(20 * time.Second):
		t.Fatal("the item never began")
	}
	pool.Stop()
	if !returned.Load() {
		t.Fatal("Stop returned before the handler did")
	}
	if b := pool.Busy(); b != 0 {
		t.Errorf("Busy %d after Stop", b)
	}
	again := make(chan string, 1)
	next, err := worker.Start(context.Background(), q, worker.Config{Spec: spec()}, func(ctx context.Context, m port.QueueMsg) worker.Outcome {
		again <- string(m.Data())
		return worker.Done()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer next.Stop()
	select {
	case n := <-again:
		if n != "long" {
			t.Fatalf("the next consumer got %q", n)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the interrupted item never came back")
	}
}
