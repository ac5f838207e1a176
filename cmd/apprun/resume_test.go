package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/apprun/apprun/embednats"
)

func TestServiceResumesWhenNATSIsBack(t *testing.T) {
	store, addr := filepath.Join(t.TempDir(), "nats"), freeAddr(t)
	startNATS := func() *embednats.Server {
		ns, err := embednats.New(embednats.Config{StoreDir: store, Listen: addr})
		if err != nil {
			t.Fatal(err)
		}
		if err := ns.Start(); err != nil {
			t.Fatal(err)
		}
		return ns
	}
	ns := startNATS()
	h := start(t, withLimits(noLimits), func(c *Config) { c.NATSURL = "nats://" + addr })
	a := h.account(100)
	h.waitRun(a, h.create(a, testRun("ok")))

	ns.Stop()
	if r := h.do("POST", "/api/v1/runs", a.Key, testRun("ok")); r.Status != 503 || r.errorCode(t) != "internal_error" {
		t.Fatalf("create with NATS down: %d %s", r.Status, r.Body)
	}
	ns = startNATS()
	defer ns.Stop()

	deadline := time.Now().Add(30 * time.Second)
	for {
		r := h.do("POST", "/api/v1/runs", a.Key, testRun("ok"))
		if r.Status == 201 {
			// Execution, projections and the live feed came back too.
			if run := h.waitRun(a, r.json(t)["run_no"].(string)); run["status"] != "completed" {
				t.Fatalf("run after NATS came back: %v", run["status"])
			}
			break
		}
		if r.Status != 503 || time.Now().After(deadline) {
			t.Fatalf("create after NATS came back: %d %s", r.Status, r.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if bal, active := h.balance(a); bal != 80 || active != 0 {
		t.Fatalf("balance %d active %d, want 80 and 0: the refused create must not have charged", bal, active)
	}
}
