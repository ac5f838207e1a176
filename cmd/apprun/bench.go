package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/apprun/apprun/bench"
)

// benchCmd is `apprun bench`: the load tool (package bench).
func (x *cli) benchCmd() *command {
	c := newCommand("bench", "", "measure creates, reads, streams, rebuild and runs against servers it starts")
	c.about = `Bench runs the load scenarios (` + strings.Join(bench.Scenarios, ", ") + `) against
apprun servers it starts from this binary, and prints each figure beside its
target (BENCHMARKS.md, docs/speed.md). A scenario that fails exits 1; a
target not met is marked NO. The soak runs only when named (--scenarios
soak): a 3-node cluster under a steady mix of runs for --duration (default
3m), one node killed and restarted every sixth of it, each node's memory,
descriptors, goroutines, log and read-model lag sampled (--plot draws
them), and the money audited at the end.`
	var cfg bench.Config
	fs := c.flags
	scenarios := fs.String("scenarios", strings.Join(bench.Scenarios, ","), "scenarios to run, comma-separated (soak runs only when named)")
	jsonPath := fs.String("json", "", "also write the report as JSON to this file (- for stdout, instead of the table)")
	fs.StringVar(&cfg.URL, "url", "", "drive a running server at this URL (limits set high) in the create, read and run scenarios; stream and resume always start their own")
	fs.StringVar(&cfg.AdminToken, "admin-token", "", "admin token of the server given by --url (APPRUN_ADMIN_TOKEN)")
	c.env.bind("admin-token", "APPRUN_ADMIN_TOKEN")
	fs.DurationVar(&cfg.Duration, "duration", 0, "length of each throughput phase (default 10s); the soak's whole length (default 3m)")
	fs.IntVar(&cfg.CreateConcurrency, "concurrency", 0, "create: concurrent clients (default 32)")
	fs.IntVar(&cfg.Accounts, "accounts", 0, "create: accounts the creates are spread over (default 64)")
	fs.IntVar(&cfg.ReadConcurrency, "read-concurrency", 0, "read: concurrent clients (default 64)")
	fs.IntVar(&cfg.Streams, "streams", 0, "stream: event streams held open (default 10000)")
	fs.IntVar(&cfg.StreamRuns, "stream-runs", 0, "stream: ticking runs the streams follow (default 20)")
	fs.IntVar(&cfg.ClusterStreams, "cluster-streams", 0, "cluster-stream: event streams held open on a 3-node cluster (default 50000)")
	fs.IntVar(&cfg.ClusterStreamRuns, "cluster-stream-runs", 0, "cluster-stream: ticking runs the streams follow, at most 96 (default 60)")
	fs.DurationVar(&cfg.ClusterStreamTick, "cluster-stream-tick", 0, "cluster-stream: how often each run ticks (default 1s)")
	fs.DurationVar(&cfg.ClusterStreamOpenWithin, "cluster-stream-open-within", 0, "cluster-stream: start no stream after this long (default 150s)")
	fs.IntVar(&cfg.ReplayEvents, "replay-events", 0, "replay: events in the log to rebuild (default 1000000)")
	fs.IntVar(&cfg.ResumeEvents, "resume-events", 0, "replay: events in the run log to resume (default 1000)")
	fs.IntVar(&cfg.ResumeLongEvents, "resume-long-events", 0, "replay: events in the long run log to resume (default 100000; -1 for none)")
	fs.IntVar(&cfg.Runs, "runs", 0, "run: runs timed end to end (default 200)")
	fs.StringVar(&cfg.Plot, "plot", "", "soak: draw each node's samples over time (RSS, descriptors, goroutines, log on disk, read-model lag) and the kills to this SVG file")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the bench process (the replay rebuild and the create baseline run in it)")
	fs.StringVar(&cfg.ServerProfiles, "server-profiles", "", "write a CPU profile of the server through each measured phase to this directory (<scenario>.prof; the replay's rebuild, which runs in the bench process, as rebuild.prof, the unsigned log's as rebuild-unsigned.prof; the soak's nodes' heaps at the end of its second fifth and of its load, soak-nodeN-heap-2nd.prof and -end.prof)")
	c.exec = func([]string) error {
		// The report names the command it measured: the flags given.
		cfg.Command = "apprun bench"
		fs.Visit(func(f *flag.Flag) {
			switch v := f.Value.String(); {
			case f.Name == "admin-token":
				cfg.Command += " --admin-token …" // a secret
			case v == "true":
				cfg.Command += " --" + f.Name
			case v == "false":
				cfg.Command += " --" + f.Name + "=false"
			default:
				cfg.Command += " --" + f.Name + " " + v
			}
		})
		cfg.Log = x.stderr
		if cfg.Plot != "" && !slices.Contains(strings.Split(*scenarios, ","), "soak") {
			return usagef("--plot draws the soak's samples: add soak to --scenarios")
		}
		return runBench(cfg, *scenarios, *jsonPath, *cpuProfile, x.stdout)
	}
	// The read scenario's baseline, a child process the bench starts.
	minimal := newCommand("serve-minimal", "FILE", "serve FILE's bytes as the read scenario's baseline")
	minimal.hidden, minimal.minArgs, minimal.maxArgs = true, 1, 1
	minimal.exec = func(a []string) error {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		return bench.ServeMinimal(ctx, a[0], x.stderr)
	}
	// The cluster scenario's bare writes: one JetStream server a process.
	bare := newCommand("serve-nats", "DIR NAME CLIENT ROUTE ROUTES", "serve one member of the cluster scenario's bare JetStream cluster")
	bare.hidden, bare.minArgs, bare.maxArgs = true, 5, 5
	bare.exec = func(a []string) error {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		return bench.ServeNATS(ctx, a[0], a[1], a[2], a[3], a[4], x.stderr)
	}
	// The cluster-stream scenario's clients, child processes the bench
	// starts: no process here may hold 50,000 connections.
	clients := newCommand("stream-clients", "", "hold the event streams the job on stdin names, for the cluster-stream scenario")
	clients.hidden, clients.maxArgs = true, 0
	clients.exec = func([]string) error {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		return bench.StreamClients(ctx, x.stdin, x.stdout, x.stderr)
	}
	return c.add(minimal, bare, clients)
}

// runBench runs the scenarios, comma-separated, and prints the report to
// out (and as JSON to jsonPath).
func runBench(cfg bench.Config, scenarios, jsonPath, cpuProfile string, out io.Writer) error {
	if cpuProfile != "" {
		stop, err := bench.StartCPUProfile(cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	cfg.Binary = bin
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	report := bench.Run(ctx, cfg, strings.Split(scenarios, ",")...)
	switch jsonPath {
	case "":
		err = report.WriteTable(out)
	case "-":
		err = report.WriteJSON(out)
	default:
		if err = report.WriteTable(out); err == nil {
			err = writeJSONFile(jsonPath, report)
		}
	}
	if err != nil {
		return err
	}
	for _, s := range report.Scenarios {
		if s.Err != "" {
			return fmt.Errorf("bench: scenario %s failed: %s", s.Name, s.Err)
		}
	}
	if !report.Met() {
		fmt.Fprintln(cfg.Log, "bench: some targets were not met (marked NO)")
	}
	return nil
}

func writeJSONFile(path string, r *bench.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	return errors.Join(r.WriteJSON(f), f.Close())
}
