package edge

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serveCapped serves h on a loopback listener capped by limits.
func serveCapped(t *testing.T, limits ConnLimits, h http.Handler) (*ConnListener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := LimitConns(ln, limits, slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv := &http.Server{Handler: h, ConnContext: cl.ConnContext, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(cl) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = srv.Close()
	})
	return cl, ln.Addr().String()
}

func dialT(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// firstLine is the status line the server answers on c.
func firstLine(t *testing.T, c net.Conn) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "no answer: " + err.Error()
	}
	return strings.TrimSpace(line)
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// An address holds at most PerAddr connections that have not shown who
// they are; a connection that identifies itself leaves the count.
func TestAConnectionCountsAgainstItsAddressUntilItIdentifies(t *testing.T) {
	t.Parallel()
	cl, addr := serveCapped(t, ConnLimits{PerAddr: 2}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/known" {
			Identified(r)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	unknown := func() int { _, n := cl.Open(); return n }
	a, b := dialT(t, addr), dialT(t, addr)
	waitUntil(t, "two connections counted", func() bool { return unknown() == 2 })
	if line := firstLine(t, dialT(t, addr)); !strings.Contains(line, " 429 ") {
		t.Fatalf("a third: %q, want 429", line)
	}
	_, _ = io.WriteString(a, "GET /known HTTP/1.1\r\nHost: x\r\n\r\n")
	if line := firstLine(t, a); !strings.Contains(line, " 204 ") {
		t.Fatalf("an identified request: %q", line)
	}
	waitUntil(t, "the identified one out of the count", func() bool { return unknown() == 1 })
	c := dialT(t, addr)
	_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if line := firstLine(t, c); !strings.Contains(line, " 204 ") {
		t.Fatalf("a new one in the freed place: %q", line)
	}
	b.Close()
	c.Close()
	waitUntil(t, "closed ones forgotten", func() bool { return unknown() == 0 })
	if open, _ := cl.Open(); open != 1 {
		t.Fatalf("%d connections open, want the identified one", open)
	}
}

// The node holds at most Max connections, identified or not; past it a
// new one is answered 503.
func TestTheNodeHoldsAtMostItsMaxOfConnections(t *testing.T) {
	t.Parallel()
	cl, addr := serveCapped(t, ConnLimits{Max: 2}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Identified(r)
		w.WriteHeader(http.StatusNoContent)
	}))
	a := dialT(t, addr)
	_, _ = io.WriteString(a, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	firstLine(t, a)
	dialT(t, addr)
	waitUntil(t, "two open", func() bool { open, _ := cl.Open(); return open == 2 })
	if line := firstLine(t, dialT(t, addr)); !strings.Contains(line, " 503 ") {
		t.Fatalf("a third: %q, want 503", line)
	}
}

// An IPv6 client is counted by its /64; an IPv4 one (mapped or not) by
// its address.
func TestAClientAddressIsItsIPv4OrItsIPv6Slash64(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"192.0.2.7:5555":             "192.0.2.7",
		"[::ffff:192.0.2.7]:5555":    "192.0.2.7",
		"[2001:db8:1:2:3:4:5:6]:443": "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1]:1":   "2001:db8:1:2::/64",
		"not an address":             "not an address",
		"[2001:db8:1:3::1%eth0]:80":  "2001:db8:1:3::/64",
	} {
		if got := ClientAddr(in); got != want {
			t.Errorf("ClientAddr(%q) = %q, want %q", in, got, want)
		}
	}
}
