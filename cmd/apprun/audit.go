package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/apprun/apprun/audit"
	"github.com/apprun/apprun/ledger"
)

// auditCmd is `apprun audit`: replay the whole log, check the ledger
// invariants, compare with the read models, print a summary, and fail on
// any violation (package audit). It needs the data directory to itself
// (stop the node).
func (x *cli) auditCmd() *command {
	c := newCommand("audit", "", "replay the event log and check every Credit: a stopped node's, or a running one's (--node)")
	c.about = `Audit replays the whole event log, checks the ledger's invariants on every
account and run, compares the read models with the log, and prints a
summary. With the ledger's public key it also verifies every account
event's signature and its link to the one before, and the log's signed
checkpoints; each --checkpoint kept outside the log must still be in it. Any violation,
mismatch or damaged record exits 1. It needs the data directory to
itself (stop the node first), or, with --node, audits a running node: it
reads the log through --nats-url and compares a snapshot of the node's
read models, taken through its admin API, as far as that snapshot goes.`
	dir := c.flags.String("data", "./data", "data directory (APPRUN_DATA)")
	c.env.bind("data", "APPRUN_DATA")
	url := c.flags.String("nats-url", "", "external NATS URL; empty opens the embedded store (APPRUN_NATS_URL)")
	c.env.bind("nats-url", "APPRUN_NATS_URL")
	pubFile := c.flags.String("public-key", "", "the ledger's public key (PEM, from apprun ledger public-key or GET /api/v1/ledger/public-key); default: the signing key's")
	keyFile := c.flags.String("key", "", "the signing key file, when no --public-key (APPRUN_LEDGER_SIGNING_KEY)")
	c.env.bind("key", "APPRUN_LEDGER_SIGNING_KEY")
	node := c.flags.String("node", "", "audit this running node (its base URL): a snapshot of its read models, through its admin API; needs --nats-url")
	adminTok := c.flags.String("admin-token", "", "the node's admin token, with --node (APPRUN_ADMIN_TOKEN; else the dev credentials in $APPRUN_DATA)")
	c.env.bind("admin-token", "APPRUN_ADMIN_TOKEN")
	asJSON := c.flags.Bool("json", false, "print the summary as one JSON object")
	account := c.flags.String("account", "", "also give this account's statement as the log gives it (with --from, --to)")
	from := c.flags.String("from", "", "the account statement's start, included (RFC 3339 or a date)")
	to := c.flags.String("to", "", "the account statement's end, excluded (RFC 3339, or a date: its day included)")
	var checkpoints []string
	c.flags.Func("checkpoint", "a checkpoint kept outside the log (apprun ledger checkpoint, or an account's): the log must still hold what it names; repeatable", func(s string) error {
		checkpoints = append(checkpoints, s)
		return nil
	})
	c.exec = func([]string) error {
		o := audit.Options{DataDir: *dir, NATSURL: *url, ClusterSecret: os.Getenv("APPRUN_CLUSTER_SECRET"), JSON: *asJSON, Account: *account,
			Node: *node}
		if *node != "" {
			o.AdminToken = adminToken(*adminTok)
		}
		var err error
		if o.From, err = dateOrTime("from", *from, false); err != nil {
			return err
		}
		if o.To, err = dateOrTime("to", *to, true); err != nil {
			return err
		}
		if (*from != "" || *to != "") && *account == "" {
			return usagef("--from and --to bound --account's statement: give --account")
		}
		for _, f := range checkpoints {
			data, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			o.Checkpoints = append(o.Checkpoints, data)
		}
		if *pubFile != "" {
			data, err := os.ReadFile(*pubFile)
			if err != nil {
				return err
			}
			if o.PublicKey, err = ledger.ParsePublicKeyPEM(data); err != nil {
				return fmt.Errorf("--public-key %s: %w", *pubFile, err)
			}
		} else if pub, fromDir, err := signingPublicKey(*keyFile, *dir); err == nil {
			o.PublicKey, o.KeyInDataDir = pub, fromDir
		} else if *keyFile != "" {
			return err // a key named but unreadable: never a silent unverified audit
		}
		return audit.Run(context.Background(), o, x.stdout)
	}
	return c
}

// auditCommand runs `apprun audit` with args, printing to out (tests).
func auditCommand(args []string, out io.Writer) error {
	return (&cli{stdout: out, stderr: io.Discard}).run(append([]string{"audit"}, args...))
}

// dateOrTime reads a flag as RFC 3339 or a date (UTC midnight; as an end,
// the day after: its day included); "" is the zero time.
func dateOrTime(name, v string, end bool) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.DateOnly, v)
	if err != nil {
		return t, usagef("--%s %q: want an RFC 3339 time or a date like 2026-11-01", name, v)
	}
	if end {
		t = t.AddDate(0, 0, 1)
	}
	return t, nil
}
