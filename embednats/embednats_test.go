package embednats

import (
	"github.com/nats-io/nats.go"
	"strings"
	"testing"
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
	const secret = "embednats-test-secret-0123"
	s, err := New(Config{StoreDir: t.TempDir(), Listen: "127.0.0.1:0", Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	u := s.ClientURL()
	if u == "" || strings.HasSuffix(u, ":4222") {
		t.Fatalf("client URL %q: port 0 must pick a free port, not the default", u)
	}
	if nc, err := nats.Connect(u); err == nil {
		nc.Close()
		t.Fatal("a client without the secret connected")
	}
	nc, err := nats.Connect(u, nats.UserInfo(User, secret))
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
