package main

import (
	"context"
	"io"
	"os"

	"github.com/apprun/apprun/audit"
)

// auditCmd is `apprun audit`: replay the whole log, check the ledger
// invariants, compare with the read models, print a summary, and fail on
// any violation (package audit). It needs the data directory to itself
// (stop the node).
func (x *cli) auditCmd() *command {
	c := newCommand("audit", "", "replay the event log and check every Credit; stop the node first")
	c.about = `Audit replays the whole event log, checks the ledger's invariants on every
account and run, compares the read models with the log, and prints a
summary. Any violation, mismatch or damaged record exits 1. It
needs the data directory to itself: stop the node first.`
	dir := c.flags.String("data", "./data", "data directory (APPRUN_DATA)")
	c.env.bind("data", "APPRUN_DATA")
	url := c.flags.String("nats-url", "", "external NATS URL; empty opens the embedded store (APPRUN_NATS_URL)")
	c.env.bind("nats-url", "APPRUN_NATS_URL")
	c.exec = func([]string) error {
		return audit.Run(context.Background(), audit.Options{DataDir: *dir, NATSURL: *url,
			ClusterSecret: os.Getenv("APPRUN_CLUSTER_SECRET")}, x.stdout)
	}
	return c
}

// auditCommand runs `apprun audit` with args, printing to out (tests).
func auditCommand(args []string, out io.Writer) error {
	return (&cli{stdout: out, stderr: io.Discard}).run(append([]string{"audit"}, args...))
}
