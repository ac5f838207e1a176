package bench

import (
	"slices"
	"sync"
	"time"
)

// latencies collects durations from many goroutines.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

// summary is the count and percentiles of a set of durations.
type summary struct {
	N                  int
	P50, P90, P99, Max time.Duration
}

func (l *latencies) summary() summary {
	l.mu.Lock()
	d := slices.Clone(l.d)
	l.mu.Unlock()
	if len(d) == 0 {
		return summary{}
	}
	slices.Sort(d)
	at := func(p float64) time.Duration { return d[min(len(d)-1, int(p*float64(len(d))))] }
	return summary{N: len(d), P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: d[len(d)-1]}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
