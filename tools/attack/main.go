// Command attack measures, from outside, what four attacks of issue 43
// ("Nothing free can hurt a node") cost a real apprun process: it starts
// `apprun serve --dev` itself on a fresh data directory and a free
// loopback port, attacks it, and reads the node's RSS (VmRSS), CPU time
// (utime+stime) and descriptors from /proc/<pid>, and its log's size from
// <data>/nats. Linux only (it reads /proc).
//
//	go build -o bin/apprun ./cmd/apprun
//	go run ./tools/attack -scenario canceled
//	go run ./tools/attack -scenario held
//	go run ./tools/attack -scenario refused
//	go run ./tools/attack -scenario natsrestart
//
// Run it from the repository's root. The report goes to stdout (and, with
// -json, to a file), progress to stderr. Exit status: 0 when every target
// was met, 3 when one was not, 1 on an error, 2 on a bad flag.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// options are the flags, all scenarios' together.
type options struct {
	scenario string
	bin      string
	jsonPath string
	keepLog  bool

	canceled    canceledOptions
	held        heldOptions
	refused     refusedOptions
	natsRestart natsRestartOptions
}

var scenarios = []struct {
	name, what string
	run        func(context.Context, options) ([]*Report, error)
}{
	{"canceled", "34 canceled runs on a slow page: the node's RSS ends within 100 MiB of its start, and another account's run completes in under 2 s throughout", runCanceled},
	{"held", "1,500 connections holding unauthenticated 1 MiB bodies on each body route: RSS growth under 150 MiB, and back near baseline after they close", runHeld},
	{"refused", "72,000 refused creates from one key: the log grows by less than 1 MiB, and 429s start within the first second", runRefused},
	{"natsrestart", "external NATS restarted: the API serves again within 10 s of NATS being back, and /readyz was 503 while it could not", runNATSRestart},
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "attack:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var reports []*Report
	var runErr error
	for _, s := range scenarios {
		if o.scenario != "all" && o.scenario != s.name {
			continue
		}
		rs, err := s.run(ctx, o)
		for _, r := range rs {
			r.finish()
			r.Print(os.Stdout)
		}
		reports = append(reports, rs...)
		if err != nil {
			runErr = fmt.Errorf("%s: %w", s.name, err)
			break
		}
	}
	if o.jsonPath != "" && len(reports) > 0 {
		if err := writeJSON(o.jsonPath, reports); err != nil {
			fmt.Fprintln(os.Stderr, "attack: write -json:", err)
			os.Exit(1)
		}
	}
	if runErr != nil {
		if errors.Is(runErr, context.Canceled) {
			runErr = errors.New("interrupted")
		}
		fmt.Fprintln(os.Stderr, "attack:", runErr)
		os.Exit(1)
	}
	for _, r := range reports {
		if missed, _ := r.Missed(); missed > 0 {
			os.Exit(3)
		}
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("attack", flag.ContinueOnError)
	fs.StringVar(&o.scenario, "scenario", "", "the attack to run: canceled, held, refused, natsrestart, or all (required)")
	fs.StringVar(&o.bin, "bin", "bin/apprun", "the apprun `binary` to start (build it with: go build -o bin/apprun ./cmd/apprun)")
	fs.StringVar(&o.jsonPath, "json", "", "also write the report(s) as JSON to this file")
	fs.BoolVar(&o.keepLog, "keep-log", false, "keep each node's log (its path is printed); it is always kept when a scenario fails")

	fs.IntVar(&o.canceled.runs, "runs", 34, "canceled: attacker runs to create and cancel")
	fs.IntVar(&o.canceled.accounts, "accounts", 5, "canceled: attacker accounts the runs are spread over")
	fs.IntVar(&o.canceled.credits, "credits", 100, "canceled: Credits each attacker account opens with")
	fs.IntVar(&o.canceled.lanes, "lanes", 1, "canceled: runs each attacker account has going at once (the node allows 3 active a account)")
	fs.DurationVar(&o.canceled.cancelAfter, "cancel-after", 700*time.Millisecond, "canceled: how long after its create answered a run is canceled")
	fs.DurationVar(&o.canceled.victimEvery, "victim-every", 2*time.Second, "canceled: how often the victim (the demo account) creates a run")
	fs.DurationVar(&o.canceled.quiet, "quiet", 10*time.Second, "canceled: quiet after the attack before the end's RSS is read")

	fs.IntVar(&o.held.conns, "conns", 1500, "held: connections held on each route")
	fs.IntVar(&o.held.sent, "sent", 64<<10, "held: body bytes each connection sends before holding, of the 1 MiB announced, on mcp, runs and stripe (signin sends 59,999 of 60,000)")
	fs.BoolVar(&o.held.sameNode, "same-node", false, "held: attack every route on one node, one after another (default: a fresh node for each route, so that one route's heap is not the next one's baseline)")
	fs.DurationVar(&o.held.hold, "hold", 10*time.Second, "held: how long the connections are held once all are open")
	fs.DurationVar(&o.held.settle, "settle", 5*time.Second, "held: wait after closing them before the RSS is read again")
	fs.StringVar(&o.held.routes, "routes", "mcp,runs,stripe,stripe-max,signin", "held: body routes to attack, in order (mcp, runs, stripe: 1 MiB announced, stripe-max: 256 KiB, its limit, signin)")
	fs.StringVar(&o.held.capRuns, "conns-per-addr", "default,0", "held: a comma-separated `list`, one node each: default (the node's own cap, 128) or a number given as APPRUN_CONNS_PER_ADDR (0: no cap)")

	fs.IntVar(&o.refused.requests, "requests", 72000, "refused: creates to send in all")
	fs.IntVar(&o.refused.clients, "clients", 8, "refused: concurrent clients, all with the one key")

	fs.StringVar(&o.natsRestart.natsServer, "nats-server", "", "natsrestart: a nats-server binary; empty: built from go.mod's github.com/nats-io/nats-server/v2 (run from the repository's root)")
	fs.DurationVar(&o.natsRestart.down, "down", 5*time.Second, "natsrestart: how long nats-server stays down")
	fs.DurationVar(&o.natsRestart.within, "within", 60*time.Second, "natsrestart: how long to wait for the node to serve again before giving up")

	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprint(w, `attack starts an apprun node (apprun serve --dev, a fresh data directory,
a free loopback port), attacks it as issue 43 describes, and reports what
it cost the node, measured from outside: RSS (VmRSS), CPU seconds
(utime+stime) and descriptors from /proc/<pid>, the log's bytes under
<data>/nats. Run it from the repository's root, after building the node.

Usage:
  go build -o bin/apprun ./cmd/apprun
  go run ./tools/attack -scenario NAME [flags]

Scenarios:
`)
		for _, s := range scenarios {
			fmt.Fprintf(w, "  %-12s %s\n", s.name, s.what)
		}
		fmt.Fprint(w, `  all          each of them in turn

Small runs to try it: -scenario canceled -runs 4; -scenario held -conns 50
-hold 2s; -scenario refused -requests 2000.

The report is on stdout, one line a figure, with its target and whether it
was met; progress is on stderr. Exit status: 0 every target met, 3 one not
met, 1 an error, 2 a bad flag.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q (flags only; see -h)", fs.Arg(0))
	}
	known := []string{"all"}
	for _, s := range scenarios {
		known = append(known, s.name)
	}
	switch {
	case o.scenario == "":
		return o, fmt.Errorf("-scenario is required: one of %s (see -h)", strings.Join(known, ", "))
	case !slices.Contains(known, o.scenario):
		return o, fmt.Errorf("unknown -scenario %q: want one of %s", o.scenario, strings.Join(known, ", "))
	}
	if _, err := os.Stat(o.bin); err != nil {
		return o, fmt.Errorf("no apprun binary at %s: build it with `go build -o bin/apprun ./cmd/apprun` from the repository's root, or pass -bin", o.bin)
	}
	if err := errors.Join(o.canceled.validate(), o.held.validate(), o.refused.validate(), o.natsRestart.validate()); err != nil {
		return o, err
	}
	return o, nil
}

// positive fails unless value, the flag name's, is above 0.
func positive[T int | time.Duration](name string, value T) error {
	if value <= 0 {
		return fmt.Errorf("-%s must be above 0, not %v", name, value)
	}
	return nil
}
