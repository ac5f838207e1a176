// Command apprun is the run engine for paid AI Apps: `apprun serve` runs
// the service, `apprun admin ...` calls its admin API, `apprun audit` checks the log,
// `apprun bench` measures it, and `apprun run`, `runs`, `balance` and
// `cancel` are a client of its API.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "apprun:", err)
		os.Exit(1)
	}
}

// commands is what `apprun help` lists, one line each.
var commands = []struct{ name, what string }{
	{"serve", "run the service (API, event streams, website, MCP); apprun serve --help for its settings"},
	{"admin", "call the admin API: accounts, credits, keys, prices (apprun admin --help)"},
	{"audit", "replay the event log and check every Credit; stop the node first"},
	{"bench", "measure creates, reads, streams, rebuild and runs against servers it starts"},
	{"run", "run an App: apprun run <app-slug> --input file.json|- [--json]"},
	{"runs", "list your runs"},
	{"balance", "show your Credits"},
	{"cancel", "cancel a run: apprun cancel <run_no>"},
	{"version", "print the version"},
	{"help", "this list"},
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: apprun <command> [flags]")
	fmt.Fprintln(w)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.what)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "The client commands (admin, run, runs, balance, cancel) find the server at APPRUN_URL,")
	fmt.Fprintln(w, "else http://$APPRUN_ADDR, else http://127.0.0.1:8080; run, runs, balance and cancel need APPRUN_API_KEY.")
}

// commit is set by `make build` (-ldflags -X main.commit=…) where the Go
// toolchain does not stamp the build with its VCS revision.
var commit string

// version is the module's version and the commit it was built from.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "apprun (no build information)"
	}
	v, rev, dirty := info.Main.Version, orUnknown(commit), ""
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = " (modified)"
		}
	}
	return fmt.Sprintf("apprun %s, commit %s%s, %s", v, rev, dirty, info.GoVersion)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// wantsHelp says whether a command without flags of its own was asked for
// help; it prints the command's usage line.
func wantsHelp(args []string, usage string) bool {
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			fmt.Println("usage:", usage)
			return true
		}
	}
	return false
}

func run(args []string) error {
	err := dispatch(args)
	if errors.Is(err, flag.ErrHelp) {
		return nil // a command's --help: its flags were printed
	}
	return err
}

func dispatch(args []string) error {
	if len(args) == 0 {
		usage(os.Stderr)
		return errors.New("no command given")
	}
	switch args[0] {
	case "help", "-h", "--help", "-help":
		usage(os.Stdout)
		return nil
	case "version", "--version", "-version":
		fmt.Println(version())
		return nil
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
		return balanceCommand(args[1:], os.Stdout)
	case "cancel":
		return cancelCommand(args[1:], os.Stdout)
	default:
		return fmt.Errorf("unknown command %q; apprun help lists them", args[0])
	}
}
