package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// streamScenario holds many event streams open on one node, spread over a
// few runs that tick once a second, and measures the node's resident
// memory per stream and how long an event takes from its append to a
// client.
func streamScenario(ctx context.Context, cfg Config, s *Scenario) error {
	if cfg.URL != "" {
		s.note("measured on a server of its own, not --url: it reads the server's memory and needs the test App")
	}
	c := cfg
	c.URL = ""
	srv, key, err := serverAndKey(ctx, c)
	if err != nil {
		return err
	}
	defer srv.Stop()
	runs, phase, err := tickingRuns(cfg.StreamRuns, time.Second, func(int) (string, error) {
		return srv.create(ctx, key, sleepRun(tickMS, tickMS/1000))
	})
	if err != nil {
		return err
	}
	time.Sleep(2 * time.Second) // let the runs start and the node settle
	before, err := srv.RSS()
	if err != nil {
		return err
	}
	g0, stack0, heap0, err := srv.goMetrics(ctx)
	if err != nil {
		return err
	}

	var (
		measuring atomic.Bool
		since     atomic.Int64 // unix nanos: events appended after this count
		lat       = &latencies{}
		failed    atomic.Int64
		firstErr  atomic.Value
		opened    sync.WaitGroup
		done      sync.WaitGroup
	)
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	gate := make(chan struct{}, 256) // streams being opened at once
	start := time.Now()
	for i := range cfg.Streams {
		opened.Add(1)
		done.Add(1)
		gate <- struct{}{}
		go func() {
			defer done.Done()
			once := sync.OnceFunc(func() { <-gate; opened.Done() })
			defer once()
			err := srv.rawStream(sctx, key, runs[i%len(runs)], once, func(ev event) bool {
				if measuring.Load() {
					if at, ok := eventTime(ev.Data); ok && at.UnixNano() > since.Load() {
						lat.add(time.Since(at))
					}
				}
				return true
			})
			if err != nil && sctx.Err() == nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
			}
		}()
	}
	opened.Wait()
	openTime := time.Since(start)
	time.Sleep(3 * time.Second) // every stream past its replay
	since.Store(time.Now().UnixNano())
	measuring.Store(true)
	profiled := profileServer(ctx, cfg, srv, "stream", cfg.Duration-time.Second)
	// Resident memory moves with the garbage collector's cycle: sample it
	// through the measured window and take the median.
	var rss []int64
	var g1, stack1, heap1 float64
	middle := time.Now().Add(cfg.Duration / 2)
	for end := time.Now().Add(cfg.Duration); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		if g1 == 0 && time.Now().After(middle) {
			if g1, stack1, heap1, err = srv.goMetrics(ctx); err != nil {
				return err
			}
			heapProfile(ctx, cfg, srv, "stream-heap")
		}
		v, err := srv.RSS()
		if err != nil {
			return err
		}
		rss = append(rss, v)
	}
	measuring.Store(false)
	profiled()
	slices.Sort(rss)
	after, peak := rss[len(rss)/2], rss[len(rss)-1]
	held := int64(cfg.Streams) - failed.Load()
	stop()
	done.Wait()

	if f := failed.Load(); f > 0 {
		s.note("%d streams failed or ended early; first: %v", f, firstErr.Load())
	}
	perStream := float64(after-before) / float64(cfg.Streams) / 1024
	sum := lat.summary()
	s.add("streams held open", float64(held), "streams")
	s.add("time to open them", openTime.Seconds(), "s")
	s.add("node RSS before", float64(before)/(1<<20), "MiB")
	s.add("node RSS with the streams", float64(after)/(1<<20), "MiB")
	s.add("node RSS peak", float64(peak)/(1<<20), "MiB")
	s.atMost("RSS per stream", perStream, "KiB", 16)
	n := float64(cfg.Streams)
	s.add("goroutines per stream", (g1-g0)/n, "")
	s.add("stack per stream", (stack1-stack0)/n/1024, "KiB")
	s.add("heap in use per stream", (heap1-heap0)/n/1024, "KiB")
	s.add("events delivered while measured", float64(sum.N), "events")
	s.add("delivery p50", ms(sum.P50), "ms")
	s.atMost("delivery p99", ms(sum.P99), "ms", 50)
	s.add("delivery max", ms(sum.Max), "ms")
	s.note("%d streams over %d test-sleep runs ticking once a second, started %s apart; delivery = client receipt minus the event's own time (set just before its append), measured for %s; RSS with the streams = the median of samples every 250 ms through that window; the clients are bare HTTP/1.1 connections read on one goroutine each",
		cfg.Streams, cfg.StreamRuns, phase, cfg.Duration)
	if sum.N == 0 {
		return fmt.Errorf("no event was delivered while measuring")
	}
	if f := failed.Load(); f > 0 {
		// The per-stream figure divides by every stream asked for: with
		// some refused it is wrong, so the scenario fails (a cap of 40 per
		// account made 9,960 of 10,000 fail and still printed 1.4 KiB).
		return fmt.Errorf("%d of %d streams failed or ended early; first: %v", f, cfg.Streams, firstErr.Load())
	}
	return nil
}

// tickMS is how long a ticking run lasts, the most test-sleep takes: it
// outlives the scenario, even 50,000 streams slow to open.
const tickMS = 600_000

// tickingRuns creates n runs that tick every `every` (create makes the
// i-th), their creates spread evenly over that interval, phase apart.
// Their ticks are then spread evenly over it, as the events of
// independent runs are: runs started in one burst would tick in one
// burst, and every delivery would wait for all the streams' socket
// writes (and the clients' reads, on the same 2 cores) before it.
func tickingRuns(n int, every time.Duration, create func(i int) (string, error)) (runs []string, phase time.Duration, err error) {
	runs = make([]string, n)
	phase = every / time.Duration(n)
	first := time.Now()
	for i := range runs {
		time.Sleep(time.Until(first.Add(time.Duration(i) * phase)))
		if runs[i], err = create(i); err != nil {
			return nil, 0, err
		}
	}
	return runs, phase, nil
}

// eventTime reads the "at" member of an event's data without decoding it all.
func eventTime(data string) (time.Time, bool) {
	i := strings.Index(data, `"at":"`)
	if i < 0 {
		return time.Time{}, false
	}
	rest := data[i+6:]
	j := strings.IndexByte(rest, '"')
	if j < 0 {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, rest[:j])
	return t, err == nil
}
