package embednats

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestEmbeddedServerOpensNoPortUnlessAsked(t *testing.T) {
	a, _ := New(Config{StoreDir: t.TempDir()})
	b, _ := New(Config{StoreDir: t.TempDir()})
	for _, s := range []*Server{a, b} { // two side by side on one machine
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		defer s.Stop()
		if s.ClientURL() != "" {
			t.Fatalf("client URL %q without Listen", s.ClientURL())
		}
		nc, err := s.Connect()
		if err != nil {
			t.Fatal(err)
		}
		nc.Close()
	}
	if !a.ns.JetStreamEnabled() || !a.ns.JetStreamConfig().SyncAlways {
		t.Fatal("JetStream must run with SyncAlways: this is a billing log")
	}
	if a.ns.Addr() != nil {
		t.Fatalf("listening on %v", a.ns.Addr())
	}
}

func TestListenOpensAClientPort(t *testing.T) {
	if _, err := New(Config{StoreDir: t.TempDir(), Listen: "127.0.0.1:0"}); err == nil {
		t.Fatal("a server with a client port and no secret was made")
	}
	s := startWithSecret(t)
	u := s.ClientURL()
	if u == "" || strings.HasSuffix(u, ":4222") {
		t.Fatalf("client URL %q: port 0 must pick a free port, not the default", u)
	}
	if nc, err := nats.Connect(u); err == nil {
		nc.Close()
		t.Fatal("a client without the secret connected")
	}
	nc, err := nats.Connect(u, nats.UserInfo(User, testSecret))
	if err != nil {
		t.Fatalf("a client with the secret: %v", err)
	}
	nc.Close()
	if nc, err := s.Connect(); err != nil {
		t.Fatalf("the in-process connection: %v", err)
	} else {
		nc.Close()
	}
}

func TestStopIsSafeTwiceAndBeforeStart(t *testing.T) {
	s, _ := New(Config{StoreDir: t.TempDir()})
	s.Stop()
	s2, _ := New(Config{StoreDir: t.TempDir()})
	if err := s2.Start(); err != nil {
		t.Fatal(err)
	}
	s2.Stop()
	s2.Stop()
	if _, err := New(Config{}); err == nil {
		t.Fatal("New without StoreDir succeeded")
	}
}

// Whoever holds the secret may not delete the event log or the ledger
// stream, nor delete from or purge the ledger stream; any other stream
// they may.
func TestTheSecretCannotDeleteTheLogOrTheLedger(t *testing.T) {
	t.Parallel()
	s := startWithSecret(t)
	nc, err := nats.Connect(s.ClientURL(), nats.UserInfo(User, testSecret))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i, name := range []string{"APPRUN", "APPRUN_LEDGER", "OTHER"} {
		st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{fmt.Sprintf("s%d.>", i)}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(ctx, fmt.Sprintf("s%d.x", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
		dctx, dcancel := context.WithTimeout(ctx, 2*time.Second)
		purged, deleted := st.Purge(dctx) == nil, js.DeleteStream(dctx, name) == nil
		dcancel()
		if want := name == "OTHER"; deleted != want || name == "APPRUN_LEDGER" && purged {
			t.Fatalf("stream %s: deleted %v, purged %v", name, deleted, purged)
		}
	}
}

const testSecret = "embednats-test-secret-0123"

// startWithSecret starts a server with a client port and testSecret,
// stopped when t ends.
func startWithSecret(t *testing.T) *Server {
	t.Helper()
	s, err := New(Config{StoreDir: t.TempDir(), Listen: "127.0.0.1:0", Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}
