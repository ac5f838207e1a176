// Command apprun is the run engine for paid AI Apps: `apprun serve` runs
// the service, `apprun admin ...` calls its admin API, `apprun audit` checks the log,
// `apprun bench` measures it.
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
		return fmt.Errorf("usage: apprun serve [flags] | apprun admin <command> | apprun audit [flags] | apprun bench [flags]")
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
	default:
		return fmt.Errorf("unknown command %q: want serve, admin, audit or bench", args[0])
	}
}
