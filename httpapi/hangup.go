package httpapi

import (
	"context"
	"fmt"
	"syscall"
)

// A stream on a taken-over connection has no goroutine reading it: a
// client sends nothing on an event stream, and a reader per stream would
// be a third of a stream's memory (a goroutine's stack, 4 KiB here). A
// hang-up shows instead
//
//   - at the stream's next write, which fails once the peer has closed;
//   - at its next heartbeat, which asks hungUp first (a write into a
//     connection whose peer closed is accepted once before it fails);
//   - when a key or an account is at its cap of streams, which asks
//     hungUp of its streams first (streams.go): a client that drops its
//     connection and reconnects finds its place free at once.

// errHungUp ends a stream whose client hung up: an end like a cancel,
// not an error.
var errHungUp = fmt.Errorf("httpapi: the event stream's client hung up: %w", context.Canceled)

// hungUp says whether the client has closed or reset the connection,
// without waiting. What the client sent is read and dropped on the way
// (a bounded amount a call; it has nothing to say on an event stream,
// and what it sends waits in the kernel until then). On the
// ResponseWriter path (HTTP/2) the request's context says it, and hungUp
// is false.
func (s *sseConn) hungUp() bool {
	if s == nil || s.conn == nil {
		return false
	}
	sc, ok := s.conn.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	gone := false
	err = rc.Read(func(fd uintptr) bool {
		var b [512]byte
		for range 64 {
			// The socket is non-blocking (Go's poller made it so): a read
			// with nothing to read fails with EAGAIN instead of waiting.
			n, err := syscall.Read(int(fd), b[:])
			switch {
			case err == nil && n > 0:
				s.dropped.Store(true)
				continue // it sent something: dropped, and read on
			case err == nil:
				gone = true // the peer's FIN
			case err != syscall.EAGAIN && err != syscall.EWOULDBLOCK && err != syscall.EINTR:
				gone = true // reset, or the connection failed
			}
			break // nothing to read (the client is there), or gone
		}
		return true // done: never wait for the connection to be readable
	})
	return gone || err != nil
}
