package main

import (
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"
)

// Without a quorum a node says so and answers at once; with it back, it
// serves again; and after a full stop any 2 of the 3 nodes start.
//   - /readyz is 503 under quorum loss (/healthz, liveness, stays 200);
//   - a create then answers 503 with Retry-After in under a second (each
//     call took 5 s, after /healthz said ok);
//   - after all three stop, two of them alone become ready and serve.
func clusterWithoutAQuorumFailsFastAndTwoOfThreeRestart(t *testing.T) {
	c := startCluster(t)
	n0 := c.nodes[0]
	_, m, err := c.call(n0, "POST", "/admin/v1/accounts", AdminToken, map[string]any{"email": "q@example.com", "credits": 100})
	if err != nil {
		t.Fatal(err)
	}
	key := m["api_key"].(string)
	if st := c.status(n0, "/readyz"); st != 200 {
		t.Fatalf("/readyz with a quorum: %d", st)
	}

	c.nodes[1].kill()
	c.nodes[2].kill()
	deadline := time.Now().Add(20 * time.Second)
	for c.status(n0, "/readyz") != 503 {
		if time.Now().After(deadline) {
			t.Fatal("/readyz still not 503 20 s after the quorum was lost")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st := c.status(n0, "/healthz"); st != 200 {
		t.Errorf("/healthz (liveness) without a quorum: %d, want 200", st)
	}
	for range 3 {
		began := time.Now()
		st, body, hdr, _ := c.callWithHeader(n0, "POST", "/api/v1/runs", key, sleepRun(10))
		if took := time.Since(began); st != 503 || hdr.Get("Retry-After") == "" || took > time.Second {
			t.Fatalf("create without a quorum: %d %v (Retry-After %q) after %s, want 503 with Retry-After in under 1 s",
				st, body, hdr.Get("Retry-After"), took)
		}
	}

	// Every node stops; two of them start again and serve.
	n0.stop()
	c.nodes[0] = nil
	c.nodes[1] = c.spawn(c.addrs[1], c.args[1]...) // both at once: neither
	c.nodes[2] = c.spawn(c.addrs[2], c.args[2]...) // is ready without the other
	deadline = time.Now().Add(90 * time.Second)
	for _, i := range []int{1, 2} {
		for c.status(c.nodes[i], "/readyz") != 200 {
			if time.Now().After(deadline) {
				t.Fatalf("node %d not ready 90 s after a full stop and a start of 2 of 3", i)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if st, m, _ := c.call(c.nodes[2], "POST", "/api/v1/runs", key, sleepRun(10)); st != 201 {
		t.Fatalf("create on 2 of 3 nodes after a full stop: %d %v", st, m)
	}
}

// status is the HTTP status of a GET, 0 when no answer came.
func (c *cluster) status(p *proc, path string) int {
	resp, err := c.client.Get(p.base + path)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
