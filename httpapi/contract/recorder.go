package contract

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"net/http"
	"sync"
	"syscall"
)

// recorder passes a response through and keeps its status, headers and
// body. It flushes, and it lets the handler take the connection over (as
// the event stream does on HTTP/1.1): the taken connection is teed, and
// done runs when it closes, with the raw response.
type recorder struct {
	w      http.ResponseWriter
	status int
	header http.Header
	body   bytes.Buffer
	// hijacked: done is called with the raw response when the
	// connection closes; response() is then nil.
	hijacked bool
	done     func(raw []byte)
}

func (r *recorder) Header() http.Header { return r.w.Header() }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status, r.header = code, r.w.Header().Clone()
	}
	r.w.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	if r.body.Len() < maxBody {
		r.body.Write(p)
	}
	return r.w.Write(p)
}

func (r *recorder) Flush() { _ = http.NewResponseController(r.w).Flush() }

// Unwrap lets http.ResponseController reach the connection's deadlines
// (the edge sets them); Flush and Hijack stay the recorder's own.
func (r *recorder) Unwrap() http.ResponseWriter { return r.w }

func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(r.w).Hijack()
	if err != nil {
		return nil, nil, err
	}
	r.hijacked = true
	return &teeConn{Conn: conn, done: r.done}, brw, nil
}

// response is what was answered on the ResponseWriter path, nil when
// nothing was (or the connection was taken over).
func (r *recorder) response() *http.Response {
	if r.hijacked || r.status == 0 {
		return nil
	}
	return &http.Response{StatusCode: r.status, Header: r.header, ProtoMajor: 1, ProtoMinor: 1}
}

// teeConn keeps what is written to a taken-over connection.
type teeConn struct {
	net.Conn
	mu   sync.Mutex
	out  bytes.Buffer
	once sync.Once
	done func(raw []byte)
}

func (c *teeConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if c.out.Len() < maxBody {
		c.out.Write(p)
	}
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// SyscallConn is the connection's own: the server peeks at a taken-over
// stream's socket to see whether its client hung up (httpapi/hangup.go).
func (c *teeConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.New("contract: the connection is not a socket")
	}
	return sc.SyscallConn()
}

func (c *teeConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.mu.Lock()
		raw := bytes.Clone(c.out.Bytes())
		c.mu.Unlock()
		c.done(raw)
	})
	return err
}
