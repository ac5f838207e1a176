// Command apprun is the run engine for paid AI Apps: `apprun serve` runs
// the service, `apprun admin ...` calls its admin API, `apprun audit` checks the log,
// `apprun bench` measures it, and `apprun run`, `runs`, `balance` and
// `cancel` are a client of its API.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "apprun:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: apprun serve [flags] | apprun admin <command> | apprun audit [flags] | apprun bench [flags] | " +
			"apprun run <app> --input file.json|- [--json] | apprun runs | apprun balance | apprun cancel <run_no>")
	}
	switch args[0] {
	case "serve":
		cfg, err := parseServe(args[1:])
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		return serve(ctx, cfg, os.Stdout)
	case "admin":
		return adminCommand(args[1:], os.Stdout)
	case "audit":
		return auditCommand(args[1:], os.Stdout)
	case "bench":
		return benchCommand(args[1:], os.Stdout)
	case "run":
		return runCommand(args[1:], os.Stdin, os.Stdout, os.Stderr)
	case "runs":
		return runsCommand(args[1:], os.Stdout)
	case "balance":
		return balanceCommand(os.Stdout)
	case "cancel":
		return cancelCommand(args[1:], os.Stdout)
	default:
		return fmt.Errorf("unknown command %q: want serve, admin, audit, bench, run, runs, balance or cancel", args[0])
	}
}
