package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// soakNodes are the cluster's nodes as the soak's clients see them. A
// node killed and restarted is a new Server (its HTTP address is a new
// port-0 one) in the same place; while it is down, or not yet ready
// again, up says so and the clients go to the others.
type soakNodes struct {
	c   *cluster
	cur [clusterNodes]atomic.Pointer[Server]
	up  [clusterNodes]atomic.Bool
}

func newSoakNodes(c *cluster) *soakNodes {
	n := &soakNodes{c: c}
	for i, s := range c.nodes {
		n.cur[i].Store(s)
		n.up[i].Store(true)
	}
	return n
}

func nodeName(i int) string { return fmt.Sprintf("node%d", i) }

// pick is node i (mod the cluster), or the next one up; the first node
// it tried when none is up (its error then tells the client).
func (n *soakNodes) pick(i int) (int, *Server) {
	for k := range clusterNodes {
		j := (i + k) % clusterNodes
		if n.up[j].Load() {
			return j, n.cur[j].Load()
		}
	}
	j := i % clusterNodes
	return j, n.cur[j].Load()
}

// killAndRestart kills node i (SIGKILL), leaves it down for down, starts
// it again on its data directory (same route and client ports, same
// environment) and waits until it is ready (/readyz: its read models
// caught up with the log and its stream has a leader) within 90 s.
// mark notes each step on the time axis. It reports whether the node
// rejoined; an error is a restart that failed outright.
func (n *soakNodes) killAndRestart(ctx context.Context, i int, down time.Duration, mark func(node int, what string)) (bool, error) {
	old := n.cur[i].Load()
	n.up[i].Store(false)
	old.kill()
	mark(i, "killed")
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-time.After(down):
	}
	s, err := old.restart(ctx)
	if s == nil {
		return false, fmt.Errorf("restart %s: %w", nodeName(i), err)
	}
	n.cur[i].Store(s)
	n.c.nodes[i] = s // stopped, and its directory removed, at the end
	if err == nil {
		err = s.awaitOK(ctx, "/readyz", 90*time.Second)
	}
	if err != nil {
		return false, nil
	}
	n.up[i].Store(true)
	mark(i, "rejoined")
	return true, nil
}
