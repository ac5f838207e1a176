package node_test

import (
	"context"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"

	"github.com/apprun/apprun/node"
	"github.com/nats-io/nats-server/v2/server"
)

// An external nats-server that restarts (on its store, so the event log
// and the durable consumers are kept) loses what it held in memory: with
// one replica, the rate-limit windows. The node makes again what it
// needs and serves within seconds, without a restart of its own; and
// /readyz answers 503, with the reason, while it cannot serve, so that it
// never says ready while the API answers 503 (issue 43, point 4).
func TestANodeServesAgainAfterItsExternalNATSRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a nats-server under a node")
	}
	t.Parallel()
	addr, store := FreeAddr(t), filepath.Join(t.TempDir(), "nats")
	startNATS := func() *server.Server {
		host, port, _ := net.SplitHostPort(addr)
		p, _ := strconv.Atoi(port)
		ns, err := server.NewServer(&server.Options{Host: host, Port: p, JetStream: true, StoreDir: store, NoSigs: true, NoLog: true})
		if err != nil {
			t.Fatal(err)
		}
		ns.Start()
		if !ns.ReadyForConnections(10 * time.Second) {
			t.Fatal("nats-server not ready within 10s")
		}
		return ns
	}
	ns := startNATS()
	// The harness's limits are on (10 creates, 120 reads a minute): every
	// API call counts in a window.
	h := Start(t, WithWebhooks(50*time.Millisecond), func(c *node.Config) { c.NATSURL, c.LedgerKeyFile = "nats://"+addr, LedgerKeyFile(t) })
	a := h.Account(100)
	before := h.Create(a, RunTestApp("ok"))
	if run := h.WaitRun(a, before); run["status"] != "completed" {
		t.Fatalf("run before the restart: %v", run["status"])
	}

	ns.Shutdown()
	ns.WaitForShutdown()
	down := time.Now()
	if st, seen := h.AwaitReady(down.Add(5*time.Second), false); st != 503 || !strings.Contains(seen[len(seen)-1], "NATS") {
		t.Fatalf("/readyz with NATS down: %d %q, want 503 within 5s, saying why", st, seen)
	}
	ns = startNATS()
	defer ns.Shutdown()
	back := time.Now()

	// Ready again within 10 s; and once it says so, every call serves.
	st, seen := h.AwaitReady(back.Add(10*time.Second), true)
	if st != 200 {
		t.Fatalf("/readyz 10s after NATS came back: %d %q", st, seen)
	}
	t.Logf("ready again %s after NATS came back; /readyz said %q", time.Since(back).Round(time.Millisecond), seen)
	if r := h.Do("GET", "/api/v1/account", a.Key, nil); r.Status != 200 {
		t.Fatalf("account once ready: %d %s", r.Status, r.Body)
	}
	if r := h.Do("GET", "/api/v1/runs/"+before, a.Key, nil); r.Status != 200 || r.JSON(t)["status"] != "completed" {
		t.Fatalf("the run from before once ready: %d %s", r.Status, r.Body)
	}
	if evs := h.Collect(a, before); len(evs) == 0 || evs[len(evs)-1].Event != "completed" {
		t.Fatalf("the event stream of the run from before: %+v", evs)
	}
	// A run created now executes (the executor's consumer), streams live
	// (the core subscription), is delivered (the webhooks' consumer) and
	// shows in the read models (the projections' consumer).
	rc := NewReceiver(t)
	body := RunTestApp("hold")
	body["webhook_url"] = rc.URL
	after := h.Create(a, body)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	events, _, resp := h.Stream(ctx, a, after)
	if resp.StatusCode != 200 {
		t.Fatalf("event stream of the run after the restart: %d", resp.StatusCode)
	}
	last := ""
	for ev := range events {
		if last = ev.Event; last == "tool_running" { // executing, held: what follows comes live
			h.ReleaseHeld()
		}
	}
	if last != "completed" {
		t.Fatalf("event stream of the run after the restart ended on %q, want completed", last)
	}
	if run := h.WaitRun(a, after); run["status"] != "completed" {
		t.Fatalf("run after the restart: %v", run["status"])
	}
	rc.Await(t, 1)
	WaitDelivery(t, h, a, after, "delivered")
	listed := false
	for _, run := range h.Pages(a, "/api/v1/runs?limit=100") {
		listed = listed || run["run_no"] == after
	}
	if bal, active := h.Balance(a); !listed || bal != 80 || active != 0 {
		t.Fatalf("read models after the restart: listed %v, balance %d, active %d; want listed, 80, 0", listed, bal, active)
	}
}
