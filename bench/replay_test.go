package bench

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// The long resume reads a run's stream to its end as an EventSource does:
// a stream cut before its terminal event is opened again after the last
// id received, every event counted once (issue 50: run 1 of make bench
// failed its long resume with "unexpected EOF" when a stream was cut).
func TestFollowToEndResumesACutStreamAndCountsEachEventOnce(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := startServer(ctx, testBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	key, err := srv.account(ctx, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	runNo, err := srv.create(ctx, key, sleepRun(0, 400))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := awaitFinished(ctx, srv, key, "/api/v1/runs/"+runNo); err != nil {
		t.Fatal(err)
	}
	whole, err := followToEnd(ctx, srv, newClient(), key, runNo)
	if err != nil || whole < 400 {
		t.Fatalf("straight: %d events, %v; want at least 400", whole, err)
	}

	// The same through a proxy that ends its first two connections
	// after 8 KiB of the answer, mid-stream.
	proxy, cuts := cuttingProxy(t, srv.URL[len("http://"):], 2, 8<<10)
	through := &Server{URL: "http://" + proxy, client: srv.client}
	got, err := followToEnd(ctx, through, newClient(), key, runNo)
	if err != nil || got != whole {
		t.Fatalf("through cuts: %d events, %v; want %d, each once", got, err, whole)
	}
	if n := cuts.Load(); n != 2 {
		t.Fatalf("the proxy cut %d streams, want 2", n)
	}
}

// cuttingProxy forwards connections to target; the first `cut` of them
// are closed after `after` bytes of the answer. It counts the cuts made.
func cuttingProxy(t *testing.T, target string, cut, after int64) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var conns, cuts atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer up.Close()
				go func() { _, _ = io.Copy(up, c) }()
				if conns.Add(1) <= cut {
					if n, _ := io.CopyN(c, up, after); n == after {
						cuts.Add(1)
					}
					return
				}
				_, _ = io.Copy(c, up)
			}()
		}
	}()
	return ln.Addr().String(), &cuts
}
