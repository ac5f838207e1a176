package projections_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/embednats/natstest"
	"github.com/apprun/apprun/eventlog"
	"github.com/apprun/apprun/internal/logbuf"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/projections"
	"github.com/apprun/apprun/subjects"
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

// A read model whose consumer is deleted under it follows the log again
// (the ordered consumer makes a new one) and logs why it paused.
func TestAReadModelWhoseConsumerIsDeletedFollowsOn(t *testing.T) {
	t.Parallel()
	srv := natstest.Server(t, false)
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := eventlog.Open(ctx, nc, eventlog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	var logs logbuf.Buffer
	s, err := projections.Open(filepath.Join(t.TempDir(), "p.db"), slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Start(ctx, js, eventlog.StreamName); err != nil {
		t.Fatal(err)
	}
	save := func(id string) uint64 {
		t.Helper()
		seq, err := st.Log().Append(ctx, port.Entry{Subject: subjects.Of(subjects.KindBrand, id),
			Data: []byte(`{"type":"brand_context_saved","brand_context":{"id":"` + id + `"}}`)})
		if err != nil {
			t.Fatal(err)
		}
		return seq
	}
	if err := s.WaitFor(ctx, save("b1")); err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(ctx, eventlog.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	for info := range stream.ListConsumers(ctx).Info() {
		if err := stream.DeleteConsumer(ctx, info.Name); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.WaitFor(ctx, save("b2")); err != nil {
		t.Fatalf("the event after the deletion was not applied: %v\n%s", err, logs.String())
	}
	if !strings.Contains(logs.String(), "projections: following the log") {
		t.Errorf("nothing logged of the deleted consumer:\n%s", logs.String())
	}
}
