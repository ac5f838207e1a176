package nodetest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// FreeAddr is a loopback address nothing listens on, for a server the
// test starts, and often stops and starts again, itself. Its port lies
// below the kernel's ephemeral range: a port taken from a bind to port 0
// (what every other test's listener does) or given to an outgoing
// connection could be taken by either while that server is down, and its
// restart would fail. Within the test binary no port is handed out
// twice.
func FreeAddr(t *testing.T) string {
	t.Helper()
	top := ephemeralPorts()
	const bottom = 10000
	handedMu.Lock()
	defer handedMu.Unlock()
	for range 1000 {
		port := bottom + rand.IntN(top-bottom)
		if handed[port] {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // someone's
		}
		addr := ln.Addr().String()
		ln.Close()
		handed[port] = true
		return addr
	}
	t.Fatalf("no free port between %d and %d", bottom, top)
	return ""
}

var (
	handedMu sync.Mutex
	handed   = map[int]bool{} // ports freeAddr handed out
)

// ephemeralPorts is the first port of the kernel's ephemeral range (the
// ports it hands to a bind to port 0 and to outgoing connections).
func ephemeralPorts() int {
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				return n
			}
		}
	}
	return 32768 // Linux's default
}
