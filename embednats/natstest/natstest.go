// Package natstest starts an embedded NATS server with JetStream in a
// test's temporary directory, stopped when the test ends.
package natstest

import (
	"testing"

	"github.com/apprun/apprun/embednats"
	"github.com/nats-io/nats.go"
)

// Connect starts a server (fsync on every write when sync) and returns a
// connection to it; both end with the test.
func Connect(t testing.TB, sync bool) *nats.Conn {
	t.Helper()
	nc, err := Server(t, sync).Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Server starts a server (fsync on every write when sync), stopped when
// the test ends, for a test that needs several connections to it.
func Server(t testing.TB, sync bool) *embednats.Server {
	t.Helper()
	ns, err := embednats.New(embednats.Config{StoreDir: t.TempDir(), NoSync: !sync})
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Stop)
	return ns
}
