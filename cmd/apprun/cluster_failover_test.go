package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The node that leads the event log's stream is killed (SIGKILL) in the
// middle of a run that another node executes, so no node legitimately
// re-executes anything: the run is executed once, each progress step is in
// its log once, and creates sent to the surviving nodes during the
// election answer 201 or 503 within their deadline, never hanging and
// never a charge behind a 503.
func clusterStreamLeaderKilledMidRunReExecutesNothing(t *testing.T) {
	c := startCluster(t)
	keys := make([]string, 3)
	for i := range keys {
		_, m, err := c.call(c.nodes[0], "POST", "/admin/v1/accounts", AdminToken, map[string]any{"email": fmt.Sprintf("f%d@example.com", i), "credits": 100})
		if err != nil {
			t.Fatal(err)
		}
		keys[i] = m["api_key"].(string)
	}
	st, m, _ := c.call(c.nodes[0], "POST", "/api/v1/runs", keys[0], map[string]any{"app_slug": "test-sleep", "input": map[string]any{"ms": 8000, "steps": 40}})
	if st != 201 {
		t.Fatalf("create: %d %v", st, m)
	}
	runNo := m["run_no"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	executor := make(chan string, 1)
	var once sync.Once
	go func() {
		_, _ = c.events(ctx, c.nodes[1], keys[0], runNo, 0, func(ev SSEEvent) {
			if msg, _ := ev.Data["message"].(string); ev.Event == "tool_running" {
				once.Do(func() { executor <- strings.TrimPrefix(msg, "tick on ") })
			}
		})
	}()
	var runsOn string
	select {
	case runsOn = <-executor:
	case <-ctx.Done():
		t.Fatal("the run never reported progress")
	}
	names := make([]string, 3)
	for i, r := range c.routes {
		names[i] = "apprun-" + strings.NewReplacer(":", "-", ".", "-").Replace(r)
	}
	if !slices.Contains(names, runsOn) {
		t.Fatalf("the run reports node %q, not one of %v", runsOn, names)
	}

	// The leader to kill: neither the run's node nor node 0, whose client
	// port this test talks to.
	nc, err := nats.Connect(c.nats, nats.UserInfo("apprun", testClusterSecret))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	victim := slices.IndexFunc(names, func(n string) bool { return n != runsOn && n != names[0] })
	for leader := streamLeader(t, ctx, js); leader != names[victim]; leader = streamLeader(t, ctx, js) {
		req, _ := json.Marshal(map[string]any{"placement": map[string]any{"preferred": names[victim]}})
		if _, err := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN.APPRUN", req, 10*time.Second); err != nil {
			t.Logf("step-down towards %s: %v", names[victim], err)
		}
		if ctx.Err() != nil {
			t.Fatalf("the stream's leader never moved to %s", names[victim])
		}
		time.Sleep(200 * time.Millisecond) // polling the leader's name: no event to await
	}
	c.nodes[victim].kill()
	killed := time.Now()

	// An event stream opened during the election waits for it (a
	// browser's EventSource gives up on a 503) and follows the run to its
	// end; creates sent to the surviving nodes answer within their deadline.
	var wg sync.WaitGroup
	var during []SSEEvent
	var duringErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		during, duringErr = c.events(ctx, c.nodes[(victim+2)%3], keys[0], runNo, 0, nil)
	}()
	// A create's deadline is the server's 30 s request timeout: the test's
	// client waits longer than that, so a slow answer is seen, not cut.
	c.client = &http.Client{Timeout: 40 * time.Second}
	var mu sync.Mutex
	answers := map[int]int{}
	var slowest time.Duration
	for i := range 6 {
		node := c.nodes[(victim+1+i%2)%3]
		wg.Add(1)
		go func() {
			defer wg.Done()
			began := time.Now()
			st, m, err := c.call(node, "POST", "/api/v1/runs", keys[1+i%2], sleepRun(10))
			mu.Lock()
			defer mu.Unlock()
			answers[st]++
			slowest = max(slowest, time.Since(began))
			if st == 503 && answers[503] == 1 {
				t.Logf("a create during the election answered 503 after %s: %v", time.Since(began).Round(time.Millisecond), m)
			}
			if err != nil || (st != 201 && st != 503) || time.Since(began) > 30*time.Second {
				t.Errorf("a create during the election: %d %v %v after %s", st, m, err, time.Since(began))
			}
		}()
	}
	wg.Wait()
	t.Logf("run on %s; stream leader %s killed; creates and a stream in the %s after: %v, slowest create %s", runsOn, names[victim],
		time.Since(killed).Round(time.Millisecond), answers, slowest.Round(time.Millisecond))

	// The run ends having run once, on its node: one start, each tick once.
	if duringErr != nil {
		t.Fatalf("an event stream opened during the election: %v", duringErr)
	}
	reader := c.nodes[(victim+1)%3]
	all, err := c.events(ctx, reader, keys[0], runNo, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !sameEvents(during, all) {
		t.Fatalf("the stream opened during the election saw %d events, the log has %d", len(during), len(all))
	}
	started, ticks := 0, map[int]int{}
	for _, ev := range all {
		switch ev.Event {
		case "started":
			started++
		case "tool_running":
			step, _ := ev.Data["step"].(float64)
			ticks[int(step)]++
			if msg, _ := ev.Data["message"].(string); msg != "tick on "+runsOn {
				t.Fatalf("step %v ran elsewhere: %q", step, msg)
			}
		}
	}
	if last := all[len(all)-1].Event; last != "completed" || started != 1 {
		t.Fatalf("the run: %d started events, ended %q (%v); want one start and completed", started, last, all[len(all)-1].Data)
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
		runs := c.waitAllTerminal(reader, k, time.Now().Add(60*time.Second))
		spent := 0.0
		for _, r := range runs {
			if r["status"] == "completed" {
				spent += r["credit_cost"].(float64)
			}
		}
		if _, acct, _ := c.call(reader, "GET", "/api/v1/account", k, nil); acct["balance"] != 100-spent {
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
