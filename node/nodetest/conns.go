package nodetest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// Held opens a connection, sends head (a request head without its blank
// line) and `sent` bytes of a body it announced as longer, then waits
// until the server closes the connection, and returns how long that took
// and what the server answered first (its status line, "" if none).
func Held(t *testing.T, addr, head string, sent int) (time.Duration, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	began := time.Now()
	if _, err := io.WriteString(conn, head+"\r\n\r\n"+strings.Repeat("x", sent)); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	r := bufio.NewReader(conn)
	status, _ := r.ReadString('\n')
	_, _ = io.Copy(io.Discard, r) // until the server closes (or our own bound)
	return time.Since(began), strings.TrimSpace(status)
}

func HostAddr(h *Harness) string { return strings.TrimPrefix(h.Srv.URL, "http://") }

// OpenFDs counts this process's open file descriptors.
func OpenFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

// ResidentKiB is this process's resident memory (VmRSS).
func ResidentKiB(t *testing.T) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kib int64
			fmt.Sscanf(strings.TrimSpace(rest), "%d", &kib)
			return kib
		}
	}
	t.Skip("no VmRSS")
	return 0
}

// BrowserFrom is a browser whose connections come from a given loopback
// address (every 127.x.y.z is this machine), to play a client elsewhere.
func (h *Harness) BrowserFrom(t *testing.T, ip string) *Browser {
	b := h.Browser(t)
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	b.Client.Transport = &http.Transport{DialContext: d.DialContext}
	return b
}
