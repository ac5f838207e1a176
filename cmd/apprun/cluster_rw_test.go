package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"
)

// On a 3-node cluster, a client reads on any node what it wrote on
// another, and a create whose commit outcome the node could not see (every
// 4th admission per node, half of them stored and half never sent)
// answers 201 or a refusal that charged nothing, never a 5xx that hides a
// charge. Each iteration writes on one node and reads on the others:
// open an account, grant, read the balance, create a run, read it and the
// balance, cancel it, read it and the balance again.
func clusterReadsItsOwnWritesAndNeverHidesACharge(t *testing.T) {
	c := startCluster(t, "--test-ambiguous-admissions", "4")
	const iterations = 200
	var stale []string
	staleAt := func(i int, format string, args ...any) {
		stale = append(stale, fmt.Sprintf("iteration %d: ", i)+fmt.Sprintf(format, args...))
	}
	outcomes := map[string]int{}
	for i := range iterations {
		a, b, d := c.nodes[i%3], c.nodes[(i+1)%3], c.nodes[(i+2)%3]
		st, m, err := c.call(a, "POST", "/admin/v1/accounts", AdminToken, map[string]any{"email": "rw@example.com", "credits": 10})
		if err != nil || st != 201 {
			t.Fatalf("iteration %d: open account: %d %v %v", i, st, m, err)
		}
		key, id := m["api_key"].(string), m["account_id"].(string)
		st, m, err = c.call(b, "POST", "/admin/v1/accounts/"+id+"/credits", AdminToken, map[string]any{"reason": "test", "amount": 5})
		if err != nil || st != 200 || m["balance"] != float64(15) {
			t.Fatalf("iteration %d: grant on another node: %d %v %v", i, st, m, err)
		}
		balance := func(p *proc, want float64, after string) {
			st, acct, err := c.call(p, "GET", "/api/v1/account", key, nil)
			if err != nil || st != 200 || acct["balance"] != want {
				staleAt(i, "GET /account after %s: %d %v, want balance %v", after, st, acct, want)
			}
		}
		balance(d, 15, "the grant")

		st, m, err = c.call(d, "POST", "/api/v1/runs", key, sleepRun(20000))
		if err != nil {
			t.Fatalf("iteration %d: create: %v", i, err)
		}
		if st != 201 {
			outcomes[fmt.Sprintf("%d %v", st, ErrCode(m))]++
			// A refusal charged nothing and left no run behind.
			balance(a, 15, fmt.Sprintf("a refused create (%d)", st))
			if st, page, _ := c.call(b, "GET", "/api/v1/runs", key, nil); st != 200 || len(page["data"].([]any)) != 0 {
				t.Errorf("iteration %d: create answered %d, yet the account's runs are %d %v", i, st, st, page)
			}
			continue
		}
		outcomes["201"]++
		runNo, cost := m["run_no"].(string), m["credit_cost"].(float64)
		if st, run, _ := c.call(a, "GET", "/api/v1/runs/"+runNo, key, nil); st != 200 || run["run_no"] != runNo {
			staleAt(i, "GET /runs/%s after its create: %d %v", runNo, st, run)
		}
		balance(b, 15-cost, "the create")
		st, m, err = c.call(a, "POST", "/api/v1/runs/"+runNo+"/cancel", key, nil)
		if err != nil || st != 200 {
			t.Fatalf("iteration %d: cancel on another node: %d %v %v", i, st, m, err)
		}
		if st, run, _ := c.call(b, "GET", "/api/v1/runs/"+runNo, key, nil); st != 200 || run["status"] != m["status"] {
			staleAt(i, "GET /runs/%s after its cancel answered %v: %d %v", runNo, m["status"], st, run)
		}
		balance(d, 15, "the cancel")
	}
	t.Logf("%d iterations; creates answered %v; stale answers %d", iterations, outcomes, len(stale))
	if len(stale) > 0 {
		t.Errorf("%d stale answers:\n%s", len(stale), strings.Join(stale, "\n"))
	}
	if outcomes["201"] == iterations {
		t.Errorf("no create met the injected unknown outcome as a refusal: the fault did not fire")
	}

	// The log agrees: no run without its request's answer, every charge
	// refunded (each run was canceled), the fences counted.
	c.nodes[2].stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := c.command(ctx, "audit", "--data", c.args[2][1], "--nats-url", c.nats).CombinedOutput()
	c.nodes[2] = nil
	if err != nil || !strings.Contains(string(out), "admissions fenced off") {
		t.Fatalf("audit: %v, want a clean audit that counts the fenced admissions\n%s", err, out)
	}
	t.Logf("audit: %s", out)
}
