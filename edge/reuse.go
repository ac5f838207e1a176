package edge

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"
)

// A run's event stream on HTTP/1.1 takes its connection over from
// net/http (httpapi/sse.go) and frames the body in chunks itself. When
// the body ends cleanly, the client may send its next request on the
// same connection, as HTTP/1.1 lets it: a Go program streams a run, then
// creates the next one with the same http.Client. Closing the connection
// then loses that request when it races the close (a POST is not retried
// by net/http's client), and announcing the close with "Connection:
// close" makes Node 20's fetch read a cut as the end of the body. So the
// stream gives the connection back to the server it came from, which
// serves it as a new one: ReuseListener.

// ReuseListener is a listener that also accepts the connections given
// back to it (Give).
type ReuseListener struct {
	net.Listener
	accepted chan accepted
	back     chan net.Conn
	mu       sync.Mutex
	closed   bool
	done     chan struct{}
}

type accepted struct {
	c   net.Conn
	err error
}

// reuseBacklog bounds the connections given back and not yet accepted
// again; past it one is closed (its client reconnects).
const reuseBacklog = 256

// Reuse wraps ln. Serve it with ConnContext set to its ConnContext (or
// one that calls it), so that a handler can find it (Reuser).
func Reuse(ln net.Listener) *ReuseListener {
	l := &ReuseListener{Listener: ln, accepted: make(chan accepted), back: make(chan net.Conn, reuseBacklog), done: make(chan struct{})}
	go l.pump()
	return l
}

// pump accepts from the wrapped listener until it is closed.
func (l *ReuseListener) pump() {
	for {
		c, err := l.Listener.Accept()
		select {
		case l.accepted <- accepted{c, err}:
		case <-l.done:
			if c != nil {
				c.Close()
			}
			return
		}
		if errors.Is(err, net.ErrClosed) {
			return
		}
	}
}

// Accept returns a connection given back, or the next new one.
func (l *ReuseListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.back:
		return c, nil
	default:
	}
	select {
	case c := <-l.back:
		return c, nil
	case a := <-l.accepted:
		return a.c, a.err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close closes the wrapped listener and every connection given back and
// not accepted again.
func (l *ReuseListener) Close() error {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.done)
	}
	l.mu.Unlock()
	err := l.Listener.Close()
	for {
		select {
		case c := <-l.back:
			c.Close()
		default:
			return err
		}
	}
}

// Give hands c back to be served as a new connection, with its deadlines
// cleared; a closed listener, or a full backlog, closes it instead.
func (l *ReuseListener) Give(c net.Conn) {
	if err := c.SetDeadline(time.Time{}); err != nil {
		c.Close()
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		c.Close()
		return
	}
	select {
	case l.back <- c:
	default:
		c.Close()
	}
}

type reuseCtxKey struct{}

// ConnContext puts the listener in each connection's context.
func (l *ReuseListener) ConnContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, reuseCtxKey{}, l)
}

// Reuser is the listener a request's connection came from, nil when it
// was not served by one.
func Reuser(ctx context.Context) *ReuseListener {
	l, _ := ctx.Value(reuseCtxKey{}).(*ReuseListener)
	return l
}
