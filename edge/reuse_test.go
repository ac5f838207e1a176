package edge_test

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/apprun/apprun/edge"
)

// A connection given back is accepted again; once the listener is
// closed, Accept fails and a connection given back is closed.
func TestAReuseListenerAcceptsWhatIsGivenBack(t *testing.T) {
	t.Parallel()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := edge.Reuse(inner)
	client, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(-time.Second)) // a taken-over stream's deadlines
	l.Give(c)
	again, err := l.Accept()
	if err != nil || again != c {
		t.Fatalf("Accept after Give: %v %v, want the connection given back", again, err)
	}
	if _, err := client.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := again.Read(b); err != nil || b[0] != 'x' {
		t.Fatalf("read on the connection given back: %v (its deadline not cleared?)", err)
	}
	l.Close()
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept on a closed listener: %v", err)
	}
	l.Give(again)
	_ = client.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := client.Read(b); err == nil {
		t.Fatal("a connection given back to a closed listener stayed open")
	}
}
