package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// victim creates a cold-email-writer run every interval, each timed from
// its create to the poll that first shows it completed or failed.
type victim struct {
	c       *client
	keys    *keyRing // its account's keys, for creates and polls in turn
	stopped context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	runs    []victimRun
	polled  atomic.Int64
	limited atomic.Int64 // polls answered 429
}

type victimRun struct {
	createStatus int
	status       string // the terminal status, or why there is none
	took         time.Duration
}

func startVictim(ctx context.Context, c *client, keys []string, every time.Duration) *victim {
	v := &victim{c: c, keys: &keyRing{keys: keys}}
	loop, stop := context.WithCancel(ctx)
	v.stopped = stop
	v.wg.Add(1)
	go func() {
		defer v.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			v.wg.Add(1)
			go func() {
				defer v.wg.Done()
				r := v.one(ctx)
				v.mu.Lock()
				v.runs = append(v.runs, r)
				v.mu.Unlock()
			}()
			select {
			case <-loop.Done():
				return
			case <-t.C:
			}
		}
	}()
	return v
}

// stop ends the creates, waits for the runs under way, and returns all.
func (v *victim) stop() []victimRun {
	v.stopped()
	v.wg.Wait()
	return v.runs
}

func (v *victim) one(ctx context.Context) victimRun {
	start := time.Now()
	r, err := v.c.do(ctx, "POST", "/api/v1/runs", v.keys.next(), coldEmail(), nil)
	if err != nil {
		return victimRun{status: "create error: " + err.Error()}
	}
	var out run
	if r.Status != http.StatusCreated || r.decode(&out) != nil {
		return victimRun{createStatus: r.Status, status: "not created"}
	}
	for {
		if time.Since(start) > time.Minute {
			return victimRun{createStatus: r.Status, status: "not ended within a minute", took: time.Since(start)}
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return victimRun{createStatus: r.Status, status: "interrupted"}
		}
		g, err := v.c.do(ctx, "GET", "/api/v1/runs/"+out.RunNo, v.keys.next(), nil, nil)
		v.polled.Add(1)
		if err != nil || g.Status != http.StatusOK {
			if err == nil && g.Status == http.StatusTooManyRequests {
				v.limited.Add(1)
			}
			continue
		}
		var cur run
		if g.decode(&cur) == nil && cur.terminal() {
			return victimRun{createStatus: r.Status, status: cur.Status, took: time.Since(start)}
		}
	}
}

// report adds the victim's figures.
func (v *victim) report(rep *Report, runs []victimRun) {
	var times []time.Duration
	statuses := map[string]int{}
	notCreated := map[string]int{}
	over := 0
	for _, r := range runs {
		if r.createStatus != http.StatusCreated {
			notCreated[fmt.Sprint(r.createStatus)]++
			continue
		}
		statuses[r.status]++
		if r.status == "completed" || r.status == "failed" {
			times = append(times, r.took)
			if r.took >= victimLimit {
				over++
			}
		} else {
			over++ // never seen ending: as bad as slow
		}
	}
	slices.Sort(times)
	created := len(runs) - sum(notCreated)
	rep.add("victim runs created", created, "")
	rep.check("victim run statuses", counts(statuses), "", fmt.Sprintf("all %d completed", created), statuses["completed"] == created && created > 0)
	rep.check("victim creates not created (by status)", counts(notCreated), "", "none", len(notCreated) == 0)
	if len(times) > 0 {
		rep.check("victim run time, max", times[len(times)-1].Seconds(), "s", "under 2 s", times[len(times)-1] < victimLimit)
		rep.add("victim run time, median", times[len(times)/2].Seconds(), "s")
	}
	rep.check("victim runs taking 2 s or more", over, "", "0", over == 0)
	rep.add("victim polls (429 of them)", fmt.Sprintf("%d (%d)", v.polled.Load(), v.limited.Load()), "")
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
