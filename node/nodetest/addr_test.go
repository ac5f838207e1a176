package nodetest

import (
	"net"
	"strconv"
	"testing"
)

// TestFreeAddrsStayOutOfTheEphemeralRange: a port freeAddr hands out is
// one no bind to port 0 and no outgoing connection can take while the
// test's server is down (a NATS server restarted on its address, a
// cluster node started again), and no two calls hand out the same one.
func TestFreeAddrsStayOutOfTheEphemeralRange(t *testing.T) {
	t.Parallel()
	first := ephemeralPorts()
	seen := map[string]bool{}
	for range 50 {
		addr := FreeAddr(t)
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(p)
		if port >= first {
			t.Fatalf("freeAddr gave %s: port %d is in the ephemeral range (from %d), where the kernel hands ports out", addr, port, first)
		}
		if seen[addr] {
			t.Fatalf("freeAddr gave %s twice", addr)
		}
		seen[addr] = true
	}
}
