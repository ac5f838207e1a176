package outbound

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// The special-purpose registries are refused, the public internet is not.
func TestAllowedRefusesSpecialPurposeAddresses(t *testing.T) {
	t.Parallel()
	refused := []string{
		"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "0.0.0.0", "255.255.255.255",
		"100.100.100.200", // shared address space: a cloud metadata address
		"198.18.0.1",      // benchmarking
		"192.0.0.192",     // IETF protocol assignments
		"192.0.2.1", "198.51.100.1", "203.0.113.1", "224.0.0.1", "240.0.0.1",
		"::1", "::", "fc00::1", "fe80::1", "ff02::1", "2001:db8::1", "::ffff:127.0.0.1", "64:ff9b::7f00:1", "2002:7f00:1::",
	}
	for _, a := range refused {
		if Allowed(netip.MustParseAddr(a)) {
			t.Errorf("%s allowed", a)
		}
	}
	for _, a := range []string{"8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "2a00:1450:4001::200e"} {
		if !Allowed(netip.MustParseAddr(a)) {
			t.Errorf("%s refused", a)
		}
	}
}

// The check runs at dial time, after resolution: a name that resolves to
// loopback is refused, and the error names the class, not the address.
func TestTheDialCheckRunsAfterResolution(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	_, err := Client(false, 5*time.Second).Get("http://localhost:" + port + "/")
	if err == nil || Describe(err) != "address not allowed" {
		t.Fatalf("a name resolving to loopback: %v (%q), want address not allowed", err, Describe(err))
	}
	if resp, err := Client(true, 5*time.Second).Get(srv.URL); err != nil {
		t.Fatalf("with private addresses allowed: %v", err)
	} else {
		resp.Body.Close()
	}
}

// Describe never passes an address on.
func TestDescribeNamesTheClassOnly(t *testing.T) {
	t.Parallel()
	cases := map[string]error{
		"host name not found":     &net.DNSError{Err: "no such host", Name: "nope.example", Server: "10.0.0.53:53", IsNotFound: true},
		"host name lookup failed": &net.DNSError{Err: "server misbehaving", Name: "x.example", Server: "10.0.0.53:53"},
		"timeout":                 &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 9, 8, 7)}, Err: timeoutErr{}},
		"connection failed":       errors.New("dial tcp 10.9.8.7:443: something else"),
	}
	for want, err := range cases {
		if got := Describe(err); got != want {
			t.Errorf("Describe(%v) = %q, want %q", err, got, want)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }
