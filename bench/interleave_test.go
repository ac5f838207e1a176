package bench

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// Two servers compared are loaded in turn, a b b a a b …, so that a drift
// of the host's speed falls on both, and each side's figures add up its
// own slices only.
func TestInterleaveAlternatesAndCountsEachSideItsOwnSlices(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var order []string
	op := func(name string) func(context.Context, int) error {
		return func(context.Context, int) error {
			mu.Lock()
			if len(order) == 0 || order[len(order)-1] != name {
				order = append(order, name)
			}
			mu.Unlock()
			time.Sleep(time.Millisecond)
			return nil
		}
	}
	a, b := &Server{}, &Server{} // not child processes: no CPU to read
	ra, rb := interleave(context.Background(), Config{Duration: 400 * time.Millisecond}, 1, 4,
		side{a, "a", op("a")}, side{b, "b", op("b")})
	// The warm-ups a b, then the rounds a b, b a, a b, b a: a side's two
	// slices in a row read as one.
	want := "a b a b a b a"
	if got := strings.Join(order, " "); got != want {
		t.Errorf("order %q, want %q", got, want)
	}
	for name, r := range map[string]interleaved{"a": ra, "b": rb} {
		if r.res.elapsed != 400*time.Millisecond {
			t.Errorf("%s: elapsed %s over its slices, want 400ms", name, r.res.elapsed)
		}
		if r.res.ops == 0 || int64(len(r.res.lat.d)) != r.res.ops {
			t.Errorf("%s: %d ops, %d latencies", name, r.res.ops, len(r.res.lat.d))
		}
		if r.cpuKnown {
			t.Errorf("%s: CPU known for a server that is not a child process", name)
		}
	}
}

// A server's CPU is read from /proc, and agrees with what the kernel's
// getrusage says of the same process.
func TestProcCPUAgreesWithRusage(t *testing.T) {
	t.Parallel()
	before, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	ru := cpuTime()
	for deadline := time.Now().Add(20 * time.Second); cpuTime()-ru < 200*time.Millisecond; {
		if time.Now().After(deadline) {
			t.Fatal("no 200 ms of CPU in 20 s")
		}
	}
	used := cpuTime() - ru
	after, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if d := after - before; d < used-50*time.Millisecond || d > used+100*time.Millisecond {
		t.Errorf("/proc says %s of CPU, getrusage %s", d, used)
	}
	if _, err := procCPU(-1); err == nil {
		t.Error("no error for a process that does not exist")
	}
}
