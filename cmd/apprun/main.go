// Command apprun is the run engine for paid AI Apps: `apprun serve` runs
// the service, `apprun apps` shows the Apps it serves, `apprun admin ...`
// calls its admin API, `apprun audit` checks the log, `apprun bench`
// measures it, and `apprun run`, `runs`, `balance` and `cancel` are a
// client of its API. `apprun help <command>` tells more of each.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
)

func main() {
	os.Exit((&cli{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}).main(os.Args[1:]))
}

// cli is one run of apprun: the command table, and the standard streams
// its commands read and write.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// main runs the command args name and returns the exit code: 0, 1 for an
// error doing the work, 2 for a command line apprun cannot take.
func (x *cli) main(args []string) int {
	err := x.run(args)
	var u *usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &u):
		fmt.Fprintln(x.stderr, u.Error())
		u.cmd.usage(x.stderr)
		return 2
	default:
		fmt.Fprintln(x.stderr, "apprun:", err)
		return 1
	}
}

// run runs the command args name; a command's help is printed to stdout.
func (x *cli) run(args []string) error {
	err := x.root().execute(args)
	var h *helpRequest
	if errors.As(err, &h) {
		h.cmd.help(x.stdout)
		return nil
	}
	return err
}

// root is the command table: every command, with its subcommands.
func (x *cli) root() *command {
	root := newCommand("apprun", "", "")
	root.about = `apprun is the run engine for paid AI Apps.

The client commands (admin, run, runs, balance, cancel, replay) find the server at
APPRUN_URL, else http://$APPRUN_ADDR, else http://127.0.0.1:8080; run, runs,
balance and cancel need APPRUN_API_KEY.`
	showVersion := root.flags.Bool("version", false, "print the version (as apprun version)")
	root.maxArgs = -1
	root.exec = func(args []string) error {
		switch {
		case *showVersion:
			fmt.Fprintln(x.stdout, version())
			return nil
		case len(args) == 0:
			return usagef("no command given")
		}
		return usagef("unknown command %q", args[0])
	}
	help := newCommand("help", "[<command>...]", "show a command's usage, subcommands and flags")
	help.maxArgs = -1
	help.exec = func(args []string) error {
		c := root
		for i, a := range args {
			if c = c.sub(a); c == nil {
				return usagef("unknown command %q", strings.Join(args[:i+1], " "))
			}
		}
		return &helpRequest{c}
	}
	return root.add(
		x.serveCmd(),
		x.appsCmd(),
		x.adminCmd(),
		x.auditCmd(),
		x.ledgerCmd(),
		x.benchCmd(),
		x.runCmd(),
		x.runsCmd(),
		x.balanceCmd(),
		x.cancelCmd(),
		x.replayCmd(),
		x.versionCmd(),
		help,
	)
}

// serveCmd is `apprun serve`: its flags are declared in config.go.
func (x *cli) serveCmd() *command {
	c := newCommand("serve", "", "run the service: API, event streams, website, MCP")
	c.about = `Serve runs one apprun node: the API, event streams, website and MCP on
--addr, with its data in --data (an embedded NATS server unless --nats-url).
It stops gracefully on SIGINT or SIGTERM.

Every flag has an environment variable of the same meaning, named in its
description, parsed the same way; a flag given on the command line wins.
OPENAI_API_KEY, GITHUB_TOKEN, APPRUN_CLUSTER_SECRET and the Stripe keys are
secrets: environment only. docs/deployment.md describes them.`
	flags := declareServe(c.flags, c.env)
	c.exec = func([]string) error {
		cfg, err := flags.config()
		if err != nil {
			return &usageError{err: err} // a flag or variable out of range
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		return serve(ctx, cfg, x.stdout)
	}
	return c
}

func (x *cli) versionCmd() *command {
	c := newCommand("version", "", "print the version and the commit it was built from")
	c.exec = func([]string) error {
		fmt.Fprintln(x.stdout, version())
		return nil
	}
	return c
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
