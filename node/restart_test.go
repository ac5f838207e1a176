package node_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"
)

func TestRestartKeepsEverything(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits))
	a, runs := Activity(t, h)
	held := h.Create(a, RunTestApp("hold")) // acknowledged, still running at the restart
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	evs, _, _ := h.Stream(ctx, a, held)
	var lastSeen uint64
	for ev := range evs {
		lastSeen = ev.ID
		if ev.Event == "tool_running" {
			// The stream is live; let the read model show the run running too.
			if err := h.Node.Reads().WaitFor(ctx, ev.ID); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	before := map[string]Response{}
	for _, path := range []string{"/api/v1/account", "/api/v1/runs", "/api/v1/capabilities"} {
		before[path] = h.Do("GET", path, a.Key, nil)
	}
	logs := map[string][]SSEEvent{}
	for _, r := range runs {
		before[r] = h.Do("GET", "/api/v1/runs/"+r, a.Key, nil)
		logs[r] = h.Collect(a, r)
	}
	h.Restart()
	for path, was := range before {
		p := path
		if len(path) > 0 && path[0] != '/' {
			p = "/api/v1/runs/" + path
		}
		now := h.Do("GET", p, a.Key, nil)
		if now.Status != was.Status || string(now.Body) != string(was.Body) {
			t.Errorf("GET %s changed across the restart:\nbefore %d %s\nafter  %d %s", p, was.Status, was.Body, now.Status, now.Body)
		}
	}
	for r, evs := range logs {
		again := h.Collect(a, r)
		if !reflect.DeepEqual(again, evs) {
			t.Errorf("event log of %s changed across the restart", r)
		}
	}
	// The run in flight at the restart is picked up and finishes; its charge
	// settles; a client resuming from the last id it saw gets exactly the rest.
	h.ReleaseHeld()
	rest := h.Collect(a, held, "Last-Event-ID", strconv.FormatUint(lastSeen, 10))
	whole := h.Collect(a, held)
	var want []SSEEvent
	for _, ev := range whole {
		if ev.ID > lastSeen {
			want = append(want, ev)
		}
	}
	if len(rest) == 0 || rest[len(rest)-1].Event != "completed" || !reflect.DeepEqual(rest, want) {
		t.Fatalf("resumed after the restart: %s, want the rest of the log %s", EventNames(rest), EventNames(want))
	}
	if run := h.Do("GET", "/api/v1/runs/"+held, a.Key, nil).JSON(t); run["status"] != "completed" {
		t.Fatalf("run in flight at the restart: %v", run["status"])
	}
	if bal, active := h.Balance(a); bal != 550-30-10-10 || active != 0 {
		t.Fatalf("balance %d active %d, want %d and 0", bal, active, 550-30-10-10)
	}
}

func TestProjectionsRebuildFromTheLogToTheSameState(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits))
	Activity(t, h)
	h.Stop()
	live := Dump(t, h.Dir)
	if len(live["runs"]) != 3 || len(live["accounts"]) != 2 || len(live["keys"]) != 2 || len(live["brand_contexts"]) != 1 || len(live["account_brand_contexts"]) != 1 || len(live["prices"]) < 2 {
		t.Fatalf("activity left too little to compare: %v", live)
	}
	if err := os.Remove(filepath.Join(h.Dir, "projections.db")); err != nil {
		t.Fatal(err)
	}
	h.Boot() // rebuilds from the log before it is ready
	deadline := time.Now().Add(10 * time.Second)
	for h.Node.Reads().Applied() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	h.Stop()
	rebuilt := Dump(t, h.Dir)
	if !reflect.DeepEqual(live, rebuilt) {
		for bucket := range live {
			if !reflect.DeepEqual(live[bucket], rebuilt[bucket]) {
				t.Errorf("bucket %s differs after a rebuild:\nlive    %v\nrebuilt %v", bucket, live[bucket], rebuilt[bucket])
			}
		}
	}
}
