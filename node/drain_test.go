package node

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/apprun/apprun/embednats/natstest"
	"github.com/nats-io/nats.go"
)

// Shutdown lets the drain finish: a message a subscription already holds
// is handled before the connection closes (a Close right after Drain cut
// it short).
func TestShutdownWaitsForTheDrain(t *testing.T) {
	t.Parallel()
	nc := natstest.Connect(t, false)
	started := make(chan struct{})
	var handled atomic.Bool
	if _, err := nc.Subscribe("drain.test", func(*nats.Msg) {
		close(started)
		time.Sleep(300 * time.Millisecond) // work in progress when the stop comes
		handled.Store(true)
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Publish("drain.test", nil); err != nil {
		t.Fatal(err)
	}
	<-started
	drainConn(nc, 10*time.Second)
	if !handled.Load() {
		t.Fatal("the connection closed before its subscription finished the message it held")
	}
	if !nc.IsClosed() {
		t.Fatal("the connection is not closed after the drain")
	}
}
