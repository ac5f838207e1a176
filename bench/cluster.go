package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apprun/apprun/apps"
	"github.com/apprun/apprun/embednats"
	"github.com/apprun/apprun/node"
	"github.com/nats-io/nats.go"
)

// clusterNodes is how many nodes the cluster scenario runs.
const clusterNodes = 3

// clusterScenario measures POST /api/v1/runs on a 3-node cluster (R3
// streams over loopback routes, each node a child process), the clients
// spread over the nodes, then the bare writes of one create on a 3-node
// R3 JetStream cluster of three processes and of one (barenats.go), as
// the create scenario does on one node.
func clusterScenario(ctx context.Context, cfg Config, s *Scenario) error {
	c, err := ownCluster(ctx, cfg, s)
	defer c.stop()
	if err != nil {
		return err
	}
	nodes := c.nodes
	keys, err := nodes[0].accounts(ctx, cfg.Accounts, 1_000_000_000)
	if err != nil {
		return err
	}
	for _, n := range nodes { // every node's read models know every key
		if err := awaitKey(ctx, n, keys[len(keys)-1]); err != nil {
			return err
		}
	}
	body := sleepRun(600_000, 0)
	var n, created atomic.Int64
	create := func(ctx context.Context, _ int) error {
		i := n.Add(1)
		_, err := nodes[i%clusterNodes].create(ctx, keys[i%int64(len(keys))], body)
		if err == nil {
			created.Add(1)
		}
		return err
	}
	before, err := settledLog(ctx, nodes[0])
	if err != nil {
		return err
	}
	res := loadServer(ctx, cfg, nodes[0], "cluster", cfg.CreateConcurrency, create)
	s.loadErrors("create", res)
	after, err := settledLog(ctx, nodes[0])
	if err != nil {
		return err
	}
	for _, n := range nodes {
		n.Stop()
	}

	procs, err := bareProcessWrites(ctx, cfg)
	if err != nil {
		return fmt.Errorf("bare writes on 3 processes: %w", err)
	}
	s.loadErrors("bare writes on 3 processes", procs)
	bare, err := bareClusterWrites(ctx, cfg)
	if err != nil {
		return fmt.Errorf("bare writes: %w", err)
	}
	s.loadErrors("bare writes", bare)
	if res.ops == 0 || bare.ops == 0 || procs.ops == 0 {
		return fmt.Errorf("nothing measured: %d creates, %d bare writes, %d on 3 processes", res.ops, bare.ops, procs.ops)
	}
	s.add("creates on 3 nodes", res.perSecond(), "/s")
	s.latency("create", res.lat.summary())
	s.atMost("create p99 (target)", ms(res.lat.summary().P99), "ms", 100)
	s.add("bare R3 writes, 3 processes", procs.perSecond(), "/s")
	s.latency("bare writes, 3 processes,", procs.lat.summary())
	s.add("bare R3 writes, one process", bare.perSecond(), "/s")
	s.latency("bare writes, one process,", bare.lat.summary())
	if c := created.Load(); c > 0 {
		s.add("log messages per create", float64(after-before)/float64(c), "")
	}
	s.atLeast("create ÷ bare writes, 3 processes", res.perSecond()/procs.perSecond(), "ratio", 0.6)
	s.atLeast("create ÷ bare writes, one process", res.perSecond()/bare.perSecond(), "ratio", 0.6)
	s.note("3 nodes (child processes) on one JetStream cluster over loopback routes, streams R3, SyncAlways; concurrency %d spread over the nodes, %d accounts, %s per phase",
		cfg.CreateConcurrency, cfg.Accounts, cfg.Duration)
	s.note("log messages per create: how far the log went over the creates (warm-up included), as node 1's read models applied it, divided by the creates answered 201; a bare write puts 4 in the log (the admission batch) and 1 in the create window")
	s.note("bare writes = the create-window publish + the admission batch made by the bench's probe on a 3-server R3 cluster: on 3 processes (`apprun bench serve-nats`, the cluster's shape), and in this process (the figure before issue 50, whose servers share one Go scheduler)")
	return nil
}

// settledLog is the last sequence srv's read models applied, once it
// held still for half a second: what the log holds after the writes
// that were under way (a run's start follows its create) have landed.
func settledLog(ctx context.Context, srv *Server) (uint64, error) {
	deadline := time.Now().Add(30 * time.Second)
	last := ^uint64(0)
	for {
		m, err := srv.metrics(ctx)
		if err != nil {
			return 0, err
		}
		seq := uint64(m["apprun_read_models_applied_seq"])
		if seq == last || time.Now().After(deadline) {
			return seq, nil
		}
		last = seq
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// cluster is clusterNodes apprun processes on one JetStream cluster, and
// what a client of its log, or an audit of it, needs besides.
type cluster struct {
	nodes []*Server
	// secret authenticates to the embedded servers, routes and clients;
	// keyFile is the ledger signing key the nodes share.
	secret, keyFile string
	// nats are the nodes' NATS client addresses (none unless asked for).
	nats []string
}

// stop stops every node and removes their data and the key.
func (c *cluster) stop() {
	for _, n := range c.nodes {
		if n != nil {
			n.Stop()
		}
	}
	if c.keyFile != "" {
		os.RemoveAll(filepath.Dir(c.keyFile))
	}
}

// env is what an apprun command run against the cluster's log needs (an
// audit): the secret of its client ports and the ledger's key.
func (c *cluster) env() []string {
	return []string{"APPRUN_CLUSTER_SECRET=" + c.secret, "APPRUN_LEDGER_SIGNING_KEY=" + c.keyFile}
}

// ownCluster is the cluster a scenario measures: one of its own, never
// --url's (which it notes). The caller stops it, even with an error.
func ownCluster(ctx context.Context, cfg Config, s *Scenario) (*cluster, error) {
	if cfg.URL != "" {
		s.note("measured on a cluster of its own, not --url")
	}
	return startCluster(ctx, cfg.Binary, false)
}

// startCluster starts clusterNodes apprun processes forming one cluster,
// and waits until each is ready to take writes. With clientPorts, each
// node's embedded server also opens a NATS client port (cluster.nats),
// fixed like its route address so that a restarted node has the same.
// The cluster it returns, even with an error, is to be stopped.
func startCluster(ctx context.Context, bin string, clientPorts bool) (*cluster, error) {
	token := randomHex(16)
	c := &cluster{secret: randomHex(16)}
	var err error
	if c.keyFile, err = ledgerKeyFile(); err != nil {
		return c, err
	}
	routes := make([]string, clusterNodes)
	for i := range routes {
		if routes[i], err = freeAddr(); err != nil {
			return c, err
		}
		if clientPorts {
			addr, err := freeAddr()
			if err != nil {
				return c, err
			}
			c.nats = append(c.nats, addr)
		}
	}
	nodes := make([]*Server, clusterNodes)
	errs := make([]error, clusterNodes)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() {
			name := fmt.Sprintf("bench-node%d", i+1)
			nodes[i], errs[i] = startChild(ctx, token, func(dir string) *exec.Cmd {
				cmd := exec.Command(bin, "serve")
				cmd.Env = append(append(os.Environ(), high...),
					"APPRUN_ADDR=127.0.0.1:0", "APPRUN_DATA="+filepath.Join(dir, "data"), "APPRUN_ADMIN_TOKEN="+token,
					"APPRUN_CLUSTER_NAME=apprun-bench", "APPRUN_CLUSTER_LISTEN="+routes[i],
					"APPRUN_ROUTES="+strings.Join(routes, ","), "APPRUN_REPLICAS=3", "APPRUN_CLUSTER_SECRET="+c.secret,
					"APPRUN_LEDGER_SIGNING_KEY="+c.keyFile, "APPRUN_SERVER_NAME="+name)
				if clientPorts {
					cmd.Env = append(cmd.Env, "APPRUN_NATS_LISTEN="+c.nats[i])
				}
				return cmd
			})
			if nodes[i] != nil {
				nodes[i].Name = name
			}
		})
	}
	wg.Wait()
	for _, n := range nodes {
		if n != nil {
			c.nodes = append(c.nodes, n)
		}
	}
	for i := range nodes {
		if errs[i] != nil {
			return c, fmt.Errorf("cluster node %d: %w", i, errs[i])
		}
	}
	for _, n := range c.nodes { // ready: it takes writes
		if err := n.awaitOK(ctx, "/readyz", 90*time.Second); err != nil {
			return c, err
		}
	}
	return c, nil
}

// awaitKey waits until the server knows key.
func awaitKey(ctx context.Context, s *Server, key string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, body, err := s.do(ctx, "GET", "/api/v1/account", key, nil)
		if err == nil && st == 200 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not know the bench's key within 30s: %d %s %v", s.URL, st, body, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// bareClusterWrites runs the create scenario's probes on a 3-server
// JetStream cluster in this process, with the streams R3.
func bareClusterWrites(ctx context.Context, cfg Config) (loadResult, error) {
	dir, err := os.MkdirTemp("", "apprun-bench-bare-r3-")
	if err != nil {
		return loadResult{}, err
	}
	defer os.RemoveAll(dir)
	secret := randomHex(16)
	routes := make([]string, clusterNodes)
	for i := range routes {
		if routes[i], err = freeAddr(); err != nil {
			return loadResult{}, err
		}
	}
	servers := make([]*embednats.Server, clusterNodes)
	errs := make([]error, clusterNodes)
	var wg sync.WaitGroup
	for i := range servers {
		wg.Go(func() {
			ns, err := embednats.New(embednats.Config{StoreDir: filepath.Join(dir, fmt.Sprint(i)), ServerName: fmt.Sprintf("bare%d", i),
				MaxMemory: 1 << 30, MaxStore: 16 << 30, Secret: secret,
				Cluster: embednats.Cluster{Name: "apprun-bench-bare", Listen: routes[i], Routes: routes}})
			if err == nil {
				err = ns.Start()
			}
			servers[i], errs[i] = ns, err
		})
	}
	wg.Wait()
	defer func() {
		for _, ns := range servers {
			if ns != nil {
				ns.Stop()
			}
		}
	}()
	for _, err := range errs {
		if err != nil {
			return loadResult{}, err
		}
	}
	nc, err := servers[0].Connect()
	if err != nil {
		return loadResult{}, err
	}
	defer nc.Close()
	return bareR3Load(ctx, cfg, nc)
}

// bareProcessWrites runs the create scenario's probes on a 3-process
// JetStream cluster (barenats.go), with the streams R3.
func bareProcessWrites(ctx context.Context, cfg Config) (loadResult, error) {
	nc, stop, err := bareProcesses(ctx, cfg.Binary)
	if err != nil {
		return loadResult{}, err
	}
	defer stop()
	return bareR3Load(ctx, cfg, nc)
}

// bareR3Load prepares R3 streams through nc and loads them with probes.
func bareR3Load(ctx context.Context, cfg Config, nc *nats.Conn) (loadResult, error) {
	// The new cluster may still be electing its leaders: prepare again.
	deadline := time.Now().Add(60 * time.Second)
	for {
		e, ports, err := preparedEngine(ctx, nc, bareLimits, clusterNodes, true, apps.TestSleep())
		if err == nil {
			return probeLoad(ctx, cfg, e, ports)
		}
		if time.Now().After(deadline) {
			return loadResult{}, fmt.Errorf("no R3 streams within 60s: %w", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// ledgerKeyFile writes a new ledger signing key for the cluster's nodes,
// which share a log and so one key, in a directory of its own.
func ledgerKeyFile() (string, error) {
	dir, err := os.MkdirTemp("", "apprun-bench-key")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "ledger-key.pem")
	return path, node.WriteSigningKey(path)
}
