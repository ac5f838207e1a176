// Package outbound is the one way apprun reaches other servers on behalf
// of a user: webhook deliveries and the tools of Apps. Every connection is
// checked at dial time, after name resolution, against the IANA
// special-purpose address registries for IPv4 and IPv6 (code.dny.dev/ssrf,
// which generates its deny lists from those registries): loopback,
// private, shared (100.64.0.0/10, cloud metadata lives there), benchmark
// (198.18.0.0/15), IETF protocol assignments (192.0.0.0/24), link-local,
// documentation, multicast, and all IPv6 outside global unicast. Errors
// shown to users name the class of failure, never an internal address.
package outbound

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
)

// guardian allows any port (a webhook receiver may listen on 8443) over
// TCP, to public addresses only.
var guardian = ssrf.New(ssrf.WithAnyPort(), ssrf.WithNetworks("tcp4", "tcp6"))

// Allowed says whether ip may be dialled (a literal address in a URL is
// refused early with it; every dial is checked again).
func Allowed(ip netip.Addr) bool {
	return guardian.SafeAddr(ip.Unmap()) == nil
}

// Dialer returns a dialer that refuses non-public addresses, unless
// allowPrivate (dev mode and tests, where receivers are local).
func Dialer(allowPrivate bool) *net.Dialer {
	d := &net.Dialer{Timeout: 5 * time.Second}
	if !allowPrivate {
		d.Control = func(network, address string, c syscall.RawConn) error {
			if err := guardian.Safe(network, address, c); err != nil {
				return &refusedError{err}
			}
			return nil
		}
	}
	return d
}

// Client is an HTTP client on Dialer that does not follow redirects (a
// redirect could lead anywhere; it is an answer, not a delivery).
func Client(allowPrivate bool, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		DialContext: Dialer(allowPrivate).DialContext, MaxIdleConns: 32, IdleConnTimeout: time.Minute,
		TLSHandshakeTimeout: 5 * time.Second, ResponseHeaderTimeout: timeout},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// FetchClient is the client of App tools that read a source: like Client,
// but it follows up to 5 redirects, each of them dialled through the same
// check.
func FetchClient(allowPrivate bool, timeout time.Duration) *http.Client {
	c := Client(allowPrivate, timeout)
	c.CheckRedirect = func(_ *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("too many redirects")
		}
		return nil
	}
	return c
}

// refusedError is a dial the address check refused.
type refusedError struct{ err error }

func (e *refusedError) Error() string { return "address not allowed: " + e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

// Describe names the class of an outbound request's failure, for users:
// never the resolver's or the target's internal address.
func Describe(err error) string {
	var refused *refusedError
	var dnsErr *net.DNSError
	var tlsErr *tls.RecordHeaderError
	var certErr *tls.CertificateVerificationError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &refused):
		return "address not allowed"
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return "host name not found"
		}
		return "host name lookup failed"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "host unreachable"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), isTimeout(err):
		return "timeout"
	case errors.As(err, &certErr), errors.As(err, &tlsErr), strings.Contains(err.Error(), "tls:"):
		return "TLS handshake failed"
	}
	return "connection failed"
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
