package httpapi

import (
	"net"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// pair is a loopback TCP connection: the server's end in an sseConn, the
// client's end.
func pair(t *testing.T) (*sseConn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return &sseConn{conn: server}, client.(*net.TCPConn)
}

// becomes waits (bounded) until hungUp says want: a peer's close arrives
// a moment after it returns.
func becomes(t *testing.T, s *sseConn, want bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); s.hungUp() != want; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("hungUp stayed %v, want %v", !want, want)
		}
	}
}

// arrived waits (bounded) until the client's bytes are in s's socket, so
// that hungUp has them to read: the kernel's count of unread bytes.
func arrived(t *testing.T, s *sseConn) {
	t.Helper()
	rc, err := s.conn.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		var n int
		var errno syscall.Errno
		if err := rc.Control(func(fd uintptr) {
			_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
		}); err != nil || errno != 0 {
			t.Fatalf("unread bytes: %v %v", err, errno)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the client's byte never arrived")
		}
	}
}

func TestHungUpSeesTheClientLeaveWithoutWaiting(t *testing.T) {
	t.Parallel()
	t.Run("there, then closed", func(t *testing.T) {
		s, client := pair(t)
		for range 3 {
			if s.hungUp() {
				t.Fatal("hungUp while the client is there")
			}
		}
		client.Close()
		becomes(t, s, true)
	})
	t.Run("there and talking, then reset", func(t *testing.T) {
		s, client := pair(t)
		if _, err := client.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		arrived(t, s) // what is read must not count as a hang-up
		if s.hungUp() || s.hungUp() {
			t.Fatal("hungUp for a client that sent a byte")
		}
		_ = client.SetLinger(0) // close with a reset
		client.Close()
		becomes(t, s, true)
	})
	t.Run("the ResponseWriter path", func(t *testing.T) {
		if (&sseConn{}).hungUp() || (*sseConn)(nil).hungUp() {
			t.Fatal("hungUp without a taken-over connection")
		}
	})
	t.Run("half closed by the client", func(t *testing.T) {
		// A client that closes its sending side has hung up on an event
		// stream as far as apprun goes: it cannot resume on it.
		s, client := pair(t)
		_ = client.CloseWrite()
		becomes(t, s, true)
	})
}
