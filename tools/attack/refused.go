package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Scenario refused: one key sends creates the App's input schema refuses
// (422), each with an Idempotency-Key of its own, as fast as a few
// clients can. A refused create must write nothing, and the key's refusal
// budget must turn it to 429s within the first second.

type refusedOptions struct {
	requests, clients int
}

func (o refusedOptions) validate() error {
	return errors.Join(positive("requests", o.requests), positive("clients", o.clients))
}

// refusedBody is a create cold-email-writer's schema refuses: target_role
// is required.
const refusedBody = `{"app_slug":"cold-email-writer","input":{"product_description":"x"}}`

func runRefused(ctx context.Context, o options) ([]*Report, error) {
	ro := o.refused
	rep := newReport("refused", fmt.Sprintf("%d refused creates from one key: the log grows by less than 1 MiB, "+
		"and 429s start within the first second", ro.requests))
	n, err := startNode(ctx, o.bin, nil)
	if err != nil {
		return nil, err
	}
	rep.NodeEnv = n.Env
	err = attackRefused(ctx, n, ro, rep)
	n.Close(err != nil || o.keepLog)
	return []*Report{rep}, err
}

func attackRefused(ctx context.Context, n *Node, ro refusedOptions, rep *Report) error {
	c := newClient(n.URL, 30*time.Second)
	// The node writes its Apps' prices and the demo account as it starts:
	// let that land before the log is measured.
	time.Sleep(2 * time.Second)
	logBefore, err := n.LogBytes()
	if err != nil {
		return err
	}
	eventsBefore, err := appendedEvents(ctx, c)
	if err != nil {
		return err
	}
	cpuBefore, _ := n.CPU()
	rssBefore, _ := n.RSS()
	progress("refused: %d creates refused by the input schema, %d clients, one key", ro.requests, ro.clients)

	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: ro.clients, MaxConnsPerHost: ro.clients}}
	var (
		next     atomic.Int64
		first429 atomic.Int64 // ns after start, 0 until one
		mu       sync.Mutex
		statuses = map[string]int{}
		wg       sync.WaitGroup
	)
	tag := strconv.FormatInt(time.Now().UnixNano(), 36)
	start := time.Now()
	for range ro.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := map[string]int{}
			defer func() {
				mu.Lock()
				for k, v := range local {
					statuses[k] += v
				}
				mu.Unlock()
			}()
			for ctx.Err() == nil {
				i := next.Add(1)
				if i > int64(ro.requests) {
					return
				}
				req, _ := http.NewRequestWithContext(ctx, "POST", n.URL+"/api/v1/runs", bytes.NewReader([]byte(refusedBody)))
				req.Header.Set("Authorization", "Bearer "+n.APIKey)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", "attack-"+tag+"-"+strconv.FormatInt(i, 10))
				r, err := hc.Do(req)
				if err != nil {
					local["error: "+errClass(err)]++
					continue
				}
				_, _ = io.Copy(io.Discard, r.Body)
				r.Body.Close()
				local[strconv.Itoa(r.StatusCode)]++
				if r.StatusCode == http.StatusTooManyRequests {
					first429.CompareAndSwap(0, int64(time.Since(start)))
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	if err := ctx.Err(); err != nil {
		return err
	}
	time.Sleep(time.Second) // whatever the node still writes
	logAfter, err := n.LogBytes()
	if err != nil {
		return err
	}
	eventsAfter, err := appendedEvents(ctx, c)
	if err != nil {
		return err
	}
	cpuAfter, _ := n.CPU()
	rssAfter, _ := n.RSS()

	sent := sum(statuses)
	rep.add("log bytes under <data>/nats before", logBefore, "B")
	rep.add("log bytes after", logAfter, "B")
	rep.check("log growth", logAfter-logBefore, "B", "less than 1 MiB (1048576 B)", logAfter-logBefore < 1<<20)
	rep.add("events appended (apprun_events_appended_total) before / after", fmt.Sprintf("%d / %d (+%d)", eventsBefore, eventsAfter, eventsAfter-eventsBefore), "")
	rep.add("answers", counts(statuses), "")
	if f := first429.Load(); f > 0 {
		rep.check("first 429 after the first request", time.Duration(f).Seconds(), "s", "within 1 s", time.Duration(f) <= time.Second)
	} else {
		rep.check("first 429 after the first request", "never", "", "within 1 s", false)
	}
	rep.add("requests sent / duration", fmt.Sprintf("%d in %.2f s", sent, took.Seconds()), "")
	rep.add("requests per second", float64(sent)/took.Seconds(), "")
	rep.add("node CPU during the attack", cpuAfter-cpuBefore, "s")
	rep.add("node RSS before / after", fmt.Sprintf("%.1f / %.1f", mib(rssBefore), mib(rssAfter)), "MiB")
	return nil
}

// appendedEvents reads apprun_events_appended_total from GET /metrics:
// the messages this node stored in the event log since it started.
func appendedEvents(ctx context.Context, c *client) (int64, error) {
	r, err := c.do(ctx, "GET", "/metrics", "", nil, nil)
	if err := expect("GET /metrics", r, err, 200); err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(r.Body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "apprun_events_appended_total "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int64(f), err
		}
	}
	return 0, fmt.Errorf("GET /metrics has no apprun_events_appended_total")
}
