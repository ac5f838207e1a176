package edge

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apprun/apprun/engine"
)

// What a connection can make the node hold is bounded by the server's
// deadlines (headers 10 s, a body RequestTimeout, idle 1 minute) and by
// the number of connections, capped here, at accept:
//
//   - ConnLimits.Max for the node, whoever holds them (a connection past
//     it is answered 503 and closed);
//   - ConnLimits.PerAddr for the connections of one client address (an
//     IPv6 one by its /64) that have not shown who they are: until a
//     request on it passes a key check or carries a website session, a
//     connection counts as its address's. Past the cap a new one is
//     answered 429 and closed. A caller that authenticates may hold as
//     many as its key's limits allow (its event streams are capped per
//     key and account).
//
// The answer at accept is written whole at once (it fits the socket's
// buffer) and the connection closed without the request read (linger).
type ConnLimits struct {
	Max     int // all connections of the node; 0: no cap
	PerAddr int // unidentified connections per client address; 0: no cap
}

// ConnListener is a listener that caps its connections (ConnLimits); the
// server must take ConnContext as its own, so that a request can mark
// its connection identified.
type ConnListener struct {
	net.Listener
	limits ConnLimits
	logger *slog.Logger

	mu   sync.Mutex
	open int
	anon map[string]int // unidentified connections by address

	lingering chan struct{} // refused connections being closed (linger)

	refusedMax, refusedAddr atomic.Uint64
	lastLog                 atomic.Int64 // unix seconds of the last refusal logged
}

// LimitConns caps ln's connections.
func LimitConns(ln net.Listener, limits ConnLimits, logger *slog.Logger) *ConnListener {
	if logger == nil {
		logger = slog.Default()
	}
	return &ConnListener{Listener: ln, limits: limits, logger: logger, anon: map[string]int{}, lingering: make(chan struct{}, lingerSlots)}
}

// Accept returns the next connection within the caps, answering and
// closing those past them.
func (l *ConnListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := ClientAddr(c.RemoteAddr().String())
		l.mu.Lock()
		switch {
		case l.limits.Max > 0 && l.open >= l.limits.Max:
			l.mu.Unlock()
			l.refusedMax.Add(1)
			l.refuse(c, http.StatusServiceUnavailable, engine.CodeInternal, "",
				fmt.Sprintf("this node holds its maximum of %d connections; retry, or use another node", l.limits.Max))
			continue
		case l.limits.PerAddr > 0 && l.anon[addr] >= l.limits.PerAddr:
			l.mu.Unlock()
			l.refusedAddr.Add(1)
			l.refuse(c, http.StatusTooManyRequests, engine.CodeRateLimited, engine.LimitConnectionsPerAddress,
				fmt.Sprintf("this address holds %d connections that have not authenticated, the most it may; close some, or send an API key", l.limits.PerAddr))
			continue
		}
		l.open++
		l.anon[addr]++
		l.mu.Unlock()
		return &trackedConn{Conn: c, l: l, addr: addr}, nil
	}
}

// ConnContext is the server's ConnContext: it lets a request reach its
// connection (identified).
func (l *ConnListener) ConnContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*trackedConn); ok {
		return context.WithValue(ctx, connKey, tc)
	}
	return ctx
}

// Open is how many connections the node holds, and how many of them have
// not shown who they are.
func (l *ConnListener) Open() (open, unidentified int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range l.anon {
		unidentified += n
	}
	return l.open, unidentified
}

// refuse answers a connection past a cap and closes it. The answer is
// small and the socket new, so the write does not wait; its deadline
// makes sure of it.
func (l *ConnListener) refuse(c net.Conn, status int, code engine.Code, limit, msg string) {
	body := `{"error":{"code":"` + string(code) + `","message":"` + msg + `"}}`
	if limit != "" {
		body = `{"error":{"code":"` + string(code) + `","message":"` + msg + `","limit":"` + limit + `"}}`
	}
	resp := "HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\n" +
		"Content-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	_, _ = c.Write([]byte(resp))
	l.linger(c)
	// Said once a minute at most: a flood must not fill the log.
	if now := time.Now().Unix(); now-l.lastLog.Load() >= 60 && l.lastLog.Swap(now) != now {
		l.logger.Warn("connections refused at their cap (this minute's first; counts since start)", "reason", msg,
			"refused_node_cap", l.refusedMax.Load(), "refused_address_cap", l.refusedAddr.Load())
	}
}

// lingerSlots bounds the refused connections closed gently at once.
const lingerSlots = 256

// linger closes a refused connection so that its answer arrives: closed
// with its request unread, the kernel would reset it, and a reset can
// discard the answer before the client reads it. So the write side is
// closed first, and what the client sends is read and dropped for a
// moment, on a goroutine of its own: as many at once as lingerSlots, the
// rest closed at once.
func (l *ConnListener) linger(c net.Conn) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		_ = c.Close()
		return
	}
	select {
	case l.lingering <- struct{}{}:
	default:
		_ = c.Close()
		return
	}
	go func() {
		defer func() { <-l.lingering }()
		_ = tc.CloseWrite()
		_ = tc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		_, _ = io.CopyN(io.Discard, tc, 64<<10)
		_ = tc.Close()
	}()
}

// release forgets a closed connection.
func (l *ConnListener) release(c *trackedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	l.open--
	if !c.known {
		l.forget(c.addr)
	}
}

// identify moves a connection out of its address's count.
func (l *ConnListener) identify(c *trackedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.known || c.closed {
		return
	}
	c.known = true
	l.forget(c.addr)
}

func (l *ConnListener) forget(addr string) {
	if l.anon[addr]--; l.anon[addr] <= 0 {
		delete(l.anon, addr)
	}
}

// trackedConn is a connection the listener counts until it is closed.
type trackedConn struct {
	net.Conn
	l    *ConnListener
	addr string
	// identifiedFast spares identify the lock once it is done.
	identifiedFast atomic.Bool
	// known and closed are guarded by l.mu.
	known, closed bool
}

func (c *trackedConn) Close() error {
	c.l.release(c)
	return c.Conn.Close()
}

type connCtxKey struct{}

var connKey = connCtxKey{}

// Identified marks the request's connection as a known caller's: it
// leaves its address's count (the caller has shown an API key or a
// website session).
func Identified(r *http.Request) {
	tc, ok := r.Context().Value(connKey).(*trackedConn)
	if !ok || tc.identifiedFast.Load() {
		return
	}
	tc.identifiedFast.Store(true)
	tc.l.identify(tc)
}

// ClientAddr is a client's address as the caps and budgets count it: the
// IP of host:port, an IPv6 one by its /64 (a host commonly holds a whole
// /64).
func ClientAddr(hostport string) string {
	ap, err := netip.ParseAddrPort(hostport)
	if err != nil {
		return hostport
	}
	ip := ap.Addr().Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}
