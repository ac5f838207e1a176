package embednats

import (
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
	s, _ := New(Config{StoreDir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if u := s.ClientURL(); u == "" || strings.HasSuffix(u, ":4222") {
		t.Fatalf("client URL %q: port 0 must pick a free port, not the default", u)
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
