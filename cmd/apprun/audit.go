package main

import (
	"context"
	"flag"
	"io"
	"os"

	"github.com/apprun/apprun/audit"
)

// auditCommand is `apprun audit`: replay the whole log, check the ledger
// invariants, compare with the read models, print a summary, and fail on
// any violation (package audit). It needs the data directory to itself
// (stop the node).
func auditCommand(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	dir := fs.String("data", env("APPRUN_DATA", "./data"), "data directory (APPRUN_DATA)")
	url := fs.String("nats-url", env("APPRUN_NATS_URL", ""), "external NATS URL; empty opens the embedded store (APPRUN_NATS_URL)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return audit.Run(context.Background(), audit.Options{DataDir: *dir, NATSURL: *url, ClusterSecret: os.Getenv("APPRUN_CLUSTER_SECRET")}, out)
}
