package main

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The event log's stream changes leader in the middle of a run (a forced
// step-down: every apprun process stays up, so none of them legitimately
// re-executes anything): the run is executed once, each progress step is
// in its log once, and creates sent during the election answer 201 or 503
// within their deadline, never hanging and never a charge behind a 503.
func TestClusterLeaderChangeMidRunReExecutesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-process cluster")
	}
	c := startCluster(t)
	keys := make([]string, 3)
	for i := range keys {
		_, m, err := c.call(c.nodes[0], "POST", "/admin/v1/accounts", testAdminToken, map[string]any{"email": fmt.Sprintf("f%d@example.com", i), "credits": 100})
		if err != nil {
			t.Fatal(err)
		}
		keys[i] = m["api_key"].(string)
	}
	st, m, _ := c.call(c.nodes[0], "POST", "/api/v1/runs", keys[0], map[string]any{"app_slug": "test-sleep", "input": map[string]any{"ms": 4000, "steps": 40}})
	if st != 201 {
		t.Fatalf("create: %d %v", st, m)
	}
	runNo := m["run_no"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ticking := make(chan struct{})
	var once sync.Once
	go func() {
		_, _ = c.events(ctx, c.nodes[1], keys[0], runNo, 0, func(ev sseEvent) {
			if ev.Event == "tool_running" {
				once.Do(func() { close(ticking) })
			}
		})
	}()
	select {
	case <-ticking:
	case <-ctx.Done():
		t.Fatal("the run never reported progress")
	}

	nc, err := nats.Connect(c.nats, nats.UserInfo("apprun", testClusterSecret))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	before := streamLeader(t, ctx, js)
	if _, err := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN.APPRUN", nil, 10*time.Second); err != nil {
		t.Fatalf("step-down: %v", err)
	}
	// Creates during the election, on every node.
	var wg sync.WaitGroup
	var mu sync.Mutex
	answers := map[int]int{}
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			began := time.Now()
			st, m, err := c.call(c.nodes[i%3], "POST", "/api/v1/runs", keys[1+i%2], sleepRun(10))
			mu.Lock()
			defer mu.Unlock()
			answers[st]++
			if err != nil || (st != 201 && st != 503) || time.Since(began) > 30*time.Second {
				t.Errorf("a create during the election: %d %v %v after %s", st, m, err, time.Since(began))
			}
		}()
	}
	wg.Wait()
	t.Logf("stream leader %s stepped down; creates during the election: %v", before, answers)

	// The run ends having run once: one start, each tick once.
	all, err := c.events(ctx, c.nodes[2], keys[0], runNo, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	started, ticks := 0, map[int]int{}
	for _, ev := range all {
		switch ev.Event {
		case "started":
			started++
		case "tool_running":
			step, _ := ev.Data["step"].(float64)
			ticks[int(step)]++
		}
	}
	if last := all[len(all)-1].Event; last != "completed" || started != 1 {
		t.Fatalf("the run: %d started events, ended %q; want one start and completed", started, last)
	}
	if len(ticks) != 40 {
		t.Fatalf("%d distinct progress steps in the log, want the run's 40", len(ticks))
	}
	for step, n := range ticks {
		if n != 1 {
			t.Fatalf("step %d is in the log %d times: the run was executed again", step, n)
		}
	}
	// Every 503 charged nothing: the accounts' balances match their runs.
	for _, k := range keys[1:] {
		runs := c.waitAllTerminal(c.nodes[0], k, time.Now().Add(60*time.Second))
		spent := 0.0
		for _, r := range runs {
			if r["status"] == "completed" {
				spent += r["credit_cost"].(float64)
			}
		}
		if _, acct, _ := c.call(c.nodes[0], "GET", "/api/v1/account", k, nil); acct["balance"] != 100-spent {
			t.Fatalf("balance %v after runs costing %v", acct["balance"], spent)
		}
	}
}

func streamLeader(t *testing.T, ctx context.Context, js jetstream.JetStream) string {
	t.Helper()
	st, err := js.Stream(ctx, "APPRUN")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil || info.Cluster == nil {
		t.Fatalf("stream info: %v", err)
	}
	return info.Cluster.Leader
}
