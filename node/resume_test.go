package node_test

import (
	"bytes"
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/apprun/apprun/audit"
	. "github.com/apprun/apprun/node/nodetest"

	"github.com/apprun/apprun/embednats"
	"github.com/apprun/apprun/node"
)

func TestServiceResumesWhenNATSIsBack(t *testing.T) {
	t.Parallel()
	store, addr := filepath.Join(t.TempDir(), "nats"), FreeAddr(t)
	startNATS := func() *embednats.Server {
		ns, err := embednats.New(embednats.Config{StoreDir: store, Listen: addr, Secret: resumeSecret})
		if err != nil {
			t.Fatal(err)
		}
		if err := ns.Start(); err != nil {
			t.Fatal(err)
		}
		return ns
	}
	ns := startNATS()
	h := Start(t, WithLimits(NoLimits), func(c *node.Config) {
		c.NATSURL, c.LedgerKeyFile = "nats://apprun:"+resumeSecret+"@"+addr, LedgerKeyFile(t)
	})
	a := h.Account(100)
	h.WaitRun(a, h.Create(a, RunTestApp("ok")))

	// NATS goes away in the middle of a burst of creates: each answer is a
	// 201 or a 503, and whatever was written was written whole.
	b := h.Account(100_000)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		statuses = map[int]int{}
	)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				st := h.Do("POST", "/api/v1/runs", b.Key, RunTestApp("ok")).Status
				mu.Lock()
				statuses[st]++
				mu.Unlock()
				if st != 201 {
					return
				}
			}
		}()
	}
	time.Sleep(100 * time.Millisecond) // creates are flowing
	ns.Stop()
	wg.Wait()
	if len(statuses) != 2 || statuses[201] == 0 || statuses[503] != 4 {
		t.Fatalf("answers while NATS went away: %v, want 201s and then one 503 per worker", statuses)
	}
	if r := h.Do("POST", "/api/v1/runs", a.Key, RunTestApp("ok")); r.Status != 503 || r.ErrorCode(t) != "internal_error" {
		t.Fatalf("create with NATS down: %d %s", r.Status, r.Body)
	}
	ns = startNATS()
	defer ns.Stop()

	deadline := time.Now().Add(30 * time.Second)
	for {
		r := h.Do("POST", "/api/v1/runs", a.Key, RunTestApp("ok"))
		if r.Status == 201 {
			// Execution, projections and the live feed came back too.
			if run := h.WaitRun(a, r.JSON(t)["run_no"].(string)); run["status"] != "completed" {
				t.Fatalf("run after NATS came back: %v", run["status"])
			}
			break
		}
		if r.Status != 503 || time.Now().After(deadline) {
			t.Fatalf("create after NATS came back: %d %s", r.Status, r.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if bal, active := h.Balance(a); bal != 80 || active != 0 {
		t.Fatalf("balance %d active %d, want 80 and 0: the refused create must not have charged", bal, active)
	}
	// Every run of the burst finishes, and the log holds no charge without
	// its run and no run without its charge.
	for _, run := range h.Pages(b, "/api/v1/runs?limit=100") {
		h.WaitRun(b, run["run_no"].(string))
	}
	h.Stop()
	var out bytes.Buffer
	if err := audit.Run(context.Background(), audit.Options{DataDir: h.Dir, NATSURL: "nats://apprun:" + resumeSecret + "@" + addr}, &out); err != nil {
		t.Fatalf("audit after the outage: %v\n%s", err, out.String())
	}
	t.Logf("burst answers %v\n%s", statuses, out.String())
}

// resumeSecret authenticates the embedded server's client port.
const resumeSecret = "resume-cluster-secret-0123"
