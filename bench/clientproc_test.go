package bench

import (
	"context"
	"net"
	"testing"
)

// Streams are spread evenly over the nodes, each node's over as few
// client processes as their descriptors allow; past the local ports one
// address has towards a node, each process dials from an address of its
// own.
func TestPlanClientsSpreadsStreamsWithinDescriptorsAndPorts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name                       string
		streams, perProcess, ports int
		wantProcs                  int
		wantSources                bool
	}{
		{"the issue's 50,000 here", 50_000, 18_000, 28_232, 3, false},
		{"a few hundred", 301, 18_000, 28_232, 3, false},
		{"more than a process holds", 50_000, 10_000, 28_232, 6, false},
		{"more than one address's ports", 90_000, 60_000, 28_232, 6, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			slots := planClients(c.streams, 3, c.perProcess, c.ports)
			if len(slots) != c.wantProcs {
				t.Fatalf("%d processes, want %d: %+v", len(slots), c.wantProcs, slots)
			}
			perNode := map[int]int{}
			next, sources := 0, map[string]bool{}
			for _, sl := range slots {
				if sl.first != next {
					t.Fatalf("slot %+v starts at %d, want %d: streams skipped or held twice", sl, sl.first, next)
				}
				next += sl.count
				perNode[sl.node] += sl.count
				if sl.count > c.perProcess || (sl.source == "" && sl.count > c.ports*9/10) {
					t.Fatalf("slot %+v holds more than a process's descriptors or an address's ports", sl)
				}
				if (sl.source != "") != c.wantSources || sources[sl.source] && sl.source != "" {
					t.Fatalf("slot %+v: source addresses %v, want one a process: %v", sl, sources, c.wantSources)
				}
				sources[sl.source] = true
			}
			if next != c.streams {
				t.Fatalf("%d streams planned, want %d", next, c.streams)
			}
			for n := range 3 {
				if d := perNode[n] - c.streams/3; d < 0 || d > 1 {
					t.Fatalf("node %d holds %d of %d streams: not even", n, perNode[n], c.streams)
				}
			}
		})
	}
}

// A client process may dial from 127.0.0.2 and up to a node on 127.0.0.1:
// all of 127/8 is loopback on Linux, which is what planClients counts on.
func TestAClientDialsFromAnotherLoopbackAddress(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	c := newClientSet(clientJob{Source: "127.0.0.2"}, nil)
	conn, err := c.dialer.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial from 127.0.0.2: %v", err)
	}
	defer conn.Close()
	if got := conn.LocalAddr().(*net.TCPAddr).IP.String(); got != "127.0.0.2" {
		t.Fatalf("dialled from %s, want 127.0.0.2", got)
	}
}

func TestTickNodeReadsTheNodeATickRanOn(t *testing.T) {
	t.Parallel()
	for data, want := range map[string]string{
		`{"step":3,"message":"tick on bench-node2","at":"2026-12-07T19:00:00Z"}`: "bench-node2",
		`{"step":3,"message":"tick","at":"2026-12-07T19:00:00Z"}`:                "",
		`{"status":"running"}`: "",
	} {
		if got := tickNode(data); got != want {
			t.Errorf("tickNode(%s) = %q, want %q", data, got, want)
		}
	}
}
