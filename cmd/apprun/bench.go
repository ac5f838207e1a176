package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/apprun/apprun/bench"
)

// benchCommand runs `apprun bench`: the load tool (package bench).
func benchCommand(args []string, out io.Writer) error {
	if len(args) == 2 && args[0] == "serve-minimal" {
		// The read scenario's baseline, started by the bench itself.
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		return bench.ServeMinimal(ctx, args[1], os.Stderr)
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var cfg bench.Config
	scenarios := fs.String("scenarios", strings.Join(bench.Scenarios, ","), "scenarios to run, comma-separated")
	jsonPath := fs.String("json", "", "also write the report as JSON to this file (- for stdout, instead of the table)")
	fs.StringVar(&cfg.URL, "url", "", "drive a running server at this URL (limits set high) in the create, read and run scenarios; stream and resume always start their own")
	fs.StringVar(&cfg.AdminToken, "admin-token", os.Getenv("APPRUN_ADMIN_TOKEN"), "admin token of the server given by --url")
	fs.DurationVar(&cfg.Duration, "duration", 0, "length of each throughput phase (default 10s)")
	fs.IntVar(&cfg.CreateConcurrency, "concurrency", 0, "create: concurrent clients (default 32)")
	fs.IntVar(&cfg.Accounts, "accounts", 0, "create: accounts the creates are spread over (default 64)")
	fs.IntVar(&cfg.ReadConcurrency, "read-concurrency", 0, "read: concurrent clients (default 64)")
	fs.IntVar(&cfg.Streams, "streams", 0, "stream: event streams held open (default 10000)")
	fs.IntVar(&cfg.StreamRuns, "stream-runs", 0, "stream: ticking runs the streams follow (default 20)")
	fs.IntVar(&cfg.ReplayEvents, "replay-events", 0, "replay: events in the log to rebuild (default 1000000)")
	fs.IntVar(&cfg.ResumeEvents, "resume-events", 0, "replay: events in the run log to resume (default 1000)")
	fs.IntVar(&cfg.ResumeLongEvents, "resume-long-events", 0, "replay: events in the long run log to resume (default 100000; -1 for none)")
	fs.IntVar(&cfg.Runs, "runs", 0, "run: runs timed end to end (default 200)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the bench process (the replay rebuild and the create baseline run in it)")
	fs.StringVar(&cfg.ServerProfiles, "server-profiles", "", "write a CPU profile of the server through each measured phase to this directory (<scenario>.prof; the replay's rebuild, which runs in the bench process, as rebuild.prof)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cpuProfile != "" {
		stop, err := bench.StartCPUProfile(*cpuProfile)
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
	cfg.Command = "apprun bench " + strings.Join(args, " ")
	cfg.Log = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	report := bench.Run(ctx, cfg, strings.Split(*scenarios, ",")...)
	switch *jsonPath {
	case "":
		err = report.WriteTable(out)
	case "-":
		err = report.WriteJSON(out)
	default:
		if err = report.WriteTable(out); err == nil {
			err = writeJSONFile(*jsonPath, report)
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
		fmt.Fprintln(os.Stderr, "bench: some targets were not met (marked NO)")
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
