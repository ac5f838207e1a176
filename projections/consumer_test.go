package projections_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/apprun/apprun/embednats/natstest"
	"github.com/apprun/apprun/eventlog"
	"github.com/apprun/apprun/projections"
	"github.com/nats-io/nats.go/jetstream"
)

// A read model's consumer is ephemeral: when its node goes without a word
// (a crash, a lost connection), the server removes the consumer after
// projections.ConsumerIdle instead of keeping it listed for good.
func TestTheConsumerOfAVanishedNodeIsRemoved(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the consumer's idle time")
	}
	t.Parallel()
	srv := natstest.Server(t, false)
	admin, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ctx := context.Background()
	if _, err := eventlog.Open(ctx, admin, eventlog.Config{}); err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(admin)
	stream, err := js.Stream(ctx, eventlog.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	ephemeral := func() int {
		n := 0
		for info := range stream.ListConsumers(ctx).Info() {
			if info.Config.Durable == "" {
				n++
			}
		}
		return n
	}
	before := ephemeral()

	node, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	nodeJS, _ := jetstream.New(node)
	s, err := projections.Open(filepath.Join(t.TempDir(), "p.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Start(ctx, nodeJS, eventlog.StreamName); err != nil {
		t.Fatal(err)
	}
	if n := ephemeral(); n != before+1 {
		t.Fatalf("%d ephemeral consumers with the read model running, want %d", n, before+1)
	}
	node.Close() // the node vanishes: nobody deletes its consumer

	deadline := time.Now().Add(projections.ConsumerIdle + 30*time.Second)
	for ephemeral() > before {
		if time.Now().After(deadline) {
			t.Fatalf("the vanished node's consumer is still listed %s after it went", projections.ConsumerIdle+30*time.Second)
		}
		time.Sleep(time.Second) // the server's own idle check: no event to await
	}
}
