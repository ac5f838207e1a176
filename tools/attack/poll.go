package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// sample is one request's answer, timed.
type sample struct {
	path       string
	start, end time.Time
	status     int // 0 when there was no answer
	body       string
	err        error
}

func (s sample) label() string {
	if s.err != nil {
		return "no answer (" + errClass(s.err) + ")"
	}
	return fmt.Sprint(s.status)
}

func isOK(s sample) bool { return s.err == nil && s.status >= 200 && s.status < 300 }

type samples []sample

func (ss *samples) add(s sample) { *ss = append(*ss, s) }

// first is the matching sample answered first after t.
func (ss samples) first(t time.Time, match func(sample) bool) sample {
	var best sample
	for _, s := range ss {
		if s.end.After(t) && match(s) && (best.end.IsZero() || s.end.Before(best.end)) {
			best = s
		}
	}
	return best
}

// firstAfter is when the first matching answer to a request sent after t
// came.
func (ss samples) firstAfter(t time.Time, match func(sample) bool) time.Time {
	var best time.Time
	for _, s := range ss {
		if s.start.After(t) && match(s) && (best.IsZero() || s.end.Before(best)) {
			best = s.end
		}
	}
	return best
}

// between is the samples sent and answered within [from, to].
func (ss samples) between(from, to time.Time) samples {
	var out samples
	for _, s := range ss {
		if !from.IsZero() && !s.start.Before(from) && !s.end.After(to) {
			out = append(out, s)
		}
	}
	return out
}

// distinct is each different answer once, in the order first seen.
func (ss samples) distinct() string {
	var seen []string
	for _, s := range ss {
		a := s.label() + " " + strings.TrimSpace(s.body)
		if s.err != nil {
			a = s.label()
		}
		if !slices.Contains(seen, a) {
			seen = append(seen, a)
		}
	}
	return strings.Join(seen, " | ")
}

// timeline is the answers to the requests sent from t on, as runs of the
// same answer: when the first of each run was sent (relative to t), how
// many, and the longest any took to be answered.
func (ss samples) timeline(t time.Time) string {
	var parts []string
	last, n, slowest := "", 0, time.Duration(0)
	flush := func() {
		if n > 0 {
			parts[len(parts)-1] += fmt.Sprintf(" ×%d (answered in ≤%.3fs)", n, slowest.Seconds())
		}
	}
	for _, s := range ss {
		if s.start.Before(t) {
			continue
		}
		if l := s.label(); l != last {
			flush()
			parts = append(parts, fmt.Sprintf("sent %+.2fs: %s", s.start.Sub(t).Seconds(), l))
			last, n, slowest = l, 0, 0
		}
		n++
		slowest = max(slowest, s.end.Sub(s.start))
	}
	flush()
	return strings.Join(parts, ", ")
}

// summary counts the answers by status.
func (ss samples) summary() string {
	m := map[string]int{}
	for _, s := range ss {
		m[s.label()]++
	}
	return counts(m)
}

// mismatches finds the API answers /readyz contradicted: a 5xx (or none)
// while /readyz answered 200 both just before it was sent and just after
// it was answered (broken), and a 2xx while it answered 503 both times
// (idle). An answer at a moment /readyz changed is neither.
func mismatches(ready, api samples) (broken, idle samples) {
	for _, s := range api {
		var before, after *sample
		for i := range ready {
			if !ready[i].end.After(s.start) {
				before = &ready[i]
			}
			if after == nil && !ready[i].start.Before(s.end) {
				after = &ready[i]
			}
		}
		if before == nil || after == nil || before.status != after.status || before.err != nil || after.err != nil {
			continue
		}
		switch {
		case before.status == 200 && (s.err != nil || s.status >= 500):
			broken = append(broken, s)
		case before.status == 503 && isOK(s):
			idle = append(idle, s)
		}
	}
	return broken, idle
}

// poller sends GET path every 100 ms until its context ends, each
// request on its own (one the node is slow to answer does not hold up the
// next), so that every answer's time is seen.
type poller struct {
	mu   sync.Mutex
	got  samples
	sent sync.WaitGroup
	done chan struct{}
}

func startPoller(ctx context.Context, c *client, path string, keys *keyRing) *poller {
	p := &poller{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			key := ""
			if keys != nil {
				key = keys.next()
			}
			p.sent.Add(1)
			go func() {
				defer p.sent.Done()
				s := sample{path: "GET " + path, start: time.Now()}
				r, err := c.do(ctx, "GET", path, key, nil, nil)
				if ctx.Err() != nil {
					return // cut short by the end, not by the node
				}
				s.end, s.status, s.body, s.err = time.Now(), r.Status, string(r.Body), err
				p.mu.Lock()
				p.got = append(p.got, s)
				p.mu.Unlock()
			}()
			select {
			case <-ctx.Done():
				p.sent.Wait()
				return
			case <-t.C:
			}
		}
	}()
	return p
}

func (p *poller) wait() { <-p.done }

// all is the answers so far, in the order their requests were sent.
func (p *poller) all() samples {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := append(samples(nil), p.got...)
	slices.SortFunc(out, func(a, b sample) int { return a.start.Compare(b.start) })
	return out
}

func (p *poller) firstAfter(t time.Time, match func(sample) bool) time.Time {
	return p.all().firstAfter(t, match)
}

// keyRing hands out API keys in turn.
type keyRing struct {
	mu   sync.Mutex
	keys []string
	i    int
}

func (k *keyRing) next() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.i++
	return k.keys[k.i%len(k.keys)]
}
