package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/apprun/apprun/embednats"
	"github.com/nats-io/nats.go"
)

// The cluster scenario's bare writes run on the shape apprun's cluster
// runs on: three processes, each one JetStream server, so that the two
// figures differ only in what apprun does. Three servers in the bench's
// own process share one Go scheduler and hand each other their RAFT
// messages without a process switch; on 2 cores, three processes of 2
// threads each wait for one another, which every replicated write pays
// whoever makes it. The scenario measures both shapes and says which
// ratio is which.

// ServeNATS is one member of the bare cluster: an embedded JetStream
// server storing in dir, named name, with clients on client and routes
// on route to routes (comma-separated), the secret from
// APPRUN_CLUSTER_SECRET, fsync on every write as apprun's nodes. It
// serves until ctx ends.
func ServeNATS(ctx context.Context, dir, name, client, route, routes string, log io.Writer) error {
	ns, err := embednats.New(embednats.Config{StoreDir: dir, ServerName: name, Listen: client,
		MaxMemory: 1 << 30, MaxStore: 16 << 30, Secret: os.Getenv("APPRUN_CLUSTER_SECRET"),
		Cluster: embednats.Cluster{Name: "apprun-bench-bare", Listen: route, Routes: strings.Split(routes, ",")}})
	if err != nil {
		return err
	}
	if err := ns.Start(); err != nil {
		return err
	}
	defer ns.Stop()
	fmt.Fprintf(log, "bare nats serving client=%s\n", ns.ClientURL())
	<-ctx.Done()
	return nil
}

// bareProcesses starts the bare cluster's members as child processes of
// bin and connects to the first once all three take clients. stop ends
// them and removes their stores.
func bareProcesses(ctx context.Context, bin string) (nc *nats.Conn, stop func(), err error) {
	dir, err := os.MkdirTemp("", "apprun-bench-bare-procs-")
	if err != nil {
		return nil, nil, err
	}
	secret := randomHex(16)
	clients, routes := make([]string, clusterNodes), make([]string, clusterNodes)
	for i := range clusterNodes {
		if clients[i], err = freeAddr(); err == nil {
			routes[i], err = freeAddr()
		}
		if err != nil {
			os.RemoveAll(dir)
			return nil, nil, err
		}
	}
	var cmds []*exec.Cmd
	stop = func() {
		if nc != nil {
			nc.Close()
		}
		for _, c := range cmds {
			_ = c.Process.Signal(os.Interrupt)
		}
		for _, c := range cmds {
			done := make(chan struct{})
			go func() { _ = c.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = c.Process.Kill()
				<-done
			}
		}
		os.RemoveAll(dir)
	}
	for i := range clusterNodes {
		c := exec.Command(bin, "bench", "serve-nats", filepath.Join(dir, fmt.Sprint(i)), fmt.Sprintf("bare%d", i),
			clients[i], routes[i], strings.Join(routes, ","))
		c.Env = append(os.Environ(), "APPRUN_CLUSTER_SECRET="+secret)
		if err := c.Start(); err != nil {
			stop()
			return nil, nil, fmt.Errorf("start bare member %d: %w", i, err)
		}
		cmds = append(cmds, c)
	}
	for _, addr := range clients {
		if err := awaitPort(ctx, addr, 60*time.Second); err != nil {
			stop()
			return nil, nil, err
		}
	}
	nc, err = nats.Connect("nats://"+clients[0], nats.UserInfo(embednats.User, secret))
	if err != nil {
		stop()
		return nil, nil, err
	}
	return nc, stop, nil
}

// awaitPort waits until addr accepts connections.
func awaitPort(ctx context.Context, addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return errors.Join(fmt.Errorf("bare member at %s takes no clients within %s", addr, within), err, ctx.Err())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
