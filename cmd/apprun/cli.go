package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/apprun/apprun/apps"
	"github.com/apprun/apprun/client"
)

// The client commands (`apprun run`, `runs`, `balance`, `cancel`) call a
// running service with APPRUN_API_KEY at APPRUN_URL through package client.
// Their rows of the command table are built here.

func apiClient() (*client.Client, error) {
	key := os.Getenv("APPRUN_API_KEY")
	if key == "" {
		return nil, errors.New("set APPRUN_API_KEY to an API key (the website's API keys page)")
	}
	return client.New(serverURL(), key), nil
}

// runCmd is `apprun run <slug> --input file.json|- [--json]`: create a
// run, show a progress line while it executes, print the report.
func (x *cli) runCmd() *command {
	c := newCommand("run", "<app-slug>", "run an App and print its report")
	c.about = `Run creates a run of the App with the input (a JSON object, from a file or
- for standard input), shows its progress on stderr, and prints the report:
the summary and, for the cold email writer, each email; indented JSON for
other Apps; the finished run as JSON with --json. A run that fails or is
canceled exits 1. 'apprun apps <app-slug>' shows what an App takes.
It needs APPRUN_API_KEY.`
	c.minArgs, c.maxArgs = 1, 1
	inputPath := c.flags.String("input", "", "the App's input: a JSON file, or - for standard input (required)")
	asJSON := c.flags.Bool("json", false, "print the finished run as JSON")
	brand := c.flags.String("brand-context", "", "a brand context id to write for")
	c.exec = func(args []string) error {
		if *inputPath == "" {
			return usagef("--input file.json (or - for standard input) is required")
		}
		return x.runApp(args[0], *inputPath, *asJSON, *brand)
	}
	return c
}

// runApp runs the App slug with the input at inputPath ("-": stdin) and
// prints its report.
func (x *cli) runApp(slug, inputPath string, asJSON bool, brand string) error {
	var raw []byte
	var err error
	if inputPath == "-" {
		raw, err = io.ReadAll(x.stdin)
	} else {
		raw, err = os.ReadFile(inputPath)
	}
	if err != nil {
		return fmt.Errorf("run: read the input: %w", err)
	}
	var input map[string]any
	if err := json.Unmarshal(raw, &input); err != nil || input == nil {
		return fmt.Errorf("run: the input must be a JSON object: %v", err)
	}
	c, err := apiClient()
	if err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	created, err := c.CreateRun(ctx, slug, input, &client.CreateOptions{BrandContextID: brand})
	if err != nil {
		return err
	}
	fmt.Fprintf(x.stderr, "%s: %d Credits\n", created.RunNo, created.CreditCost)
	progress := newProgressLine(x.stderr)
	err = c.Stream(ctx, created.RunNo, 0, func(ev client.Event) error {
		progress.show(ev)
		return nil
	})
	progress.done()
	if err != nil {
		return fmt.Errorf("run %s: following its events: %w (see it with: apprun runs)", created.RunNo, err)
	}
	run, err := c.GetRun(ctx, created.RunNo)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(x.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(run)
	}
	printRun(x.stdout, run)
	if run.Status != "completed" {
		return fmt.Errorf("run %s %s", run.RunNo, run.Status)
	}
	return nil
}

// progressLine shows the run's progress on one line on a terminal, a line
// an event elsewhere.
type progressLine struct {
	w        io.Writer
	terminal bool
	shown    bool
}

func newProgressLine(w io.Writer) *progressLine {
	f, ok := w.(*os.File)
	term := false
	if ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			term = true
		}
	}
	return &progressLine{w: w, terminal: term}
}

func (p *progressLine) show(ev client.Event) {
	var d struct {
		Status        string
		Step, Steps   int
		Tool, Message string
	}
	_ = json.Unmarshal(ev.Data, &d)
	line := ev.Type
	switch ev.Type {
	case "tool_running":
		line = fmt.Sprintf("[%d/%d] %s", d.Step, d.Steps, d.Message)
	case "started":
		line = "running"
	}
	if p.terminal {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		p.shown = true
		return
	}
	fmt.Fprintln(p.w, line)
}

func (p *progressLine) done() {
	if p.terminal && p.shown {
		fmt.Fprintln(p.w)
	}
}

// printRun prints a finished run for a person: the summary, then the
// cold email writer's emails, or any other output as indented JSON.
func printRun(w io.Writer, r client.Run) {
	switch r.Status {
	case "failed":
		if r.Error != nil && r.Error.Code == "canceled" {
			fmt.Fprintf(w, "Run %s was canceled.\n", r.RunNo)
		} else {
			fmt.Fprintf(w, "Run %s failed: %s: %s\n", r.RunNo, r.Error.Code, r.Error.Message)
		}
		if r.RefundedCredits != nil {
			fmt.Fprintf(w, "%d Credits were refunded.\n", *r.RefundedCredits)
		}
		return
	case "completed":
	default:
		fmt.Fprintf(w, "Run %s is %s.\n", r.RunNo, r.Status)
		return
	}
	fmt.Fprintln(w, r.Summary)
	var seq apps.Sequence
	if json.Unmarshal(r.Output, &seq) == nil && len(seq.Emails) > 0 {
		for _, e := range seq.Emails {
			fmt.Fprintf(w, "\n── Email %d · day %d · %s ──\nSubject: %s\n\n%s\n", e.Touch, e.SendDay, e.Angle, e.Subject, e.Body)
		}
		return
	}
	var pretty any
	if json.Unmarshal(r.Output, &pretty) == nil {
		b, _ := json.MarshalIndent(pretty, "", "  ")
		fmt.Fprintf(w, "\n%s\n", b)
	}
}

// runsCmd is `apprun runs [--limit N]`.
func (x *cli) runsCmd() *command {
	c := newCommand("runs", "", "list your runs, newest first")
	c.about = "Runs lists your runs, newest first: run number, App, status, price and\nwhen it was created. It needs APPRUN_API_KEY."
	limit := c.flags.Int("limit", 20, "how many runs, newest first (1 to 100)")
	c.exec = func([]string) error {
		cl, err := apiClient()
		if err != nil {
			return err
		}
		ctx, stop := signalContext()
		defer stop()
		runs, _, err := cl.ListRuns(ctx, *limit, "")
		if err != nil {
			return err
		}
		for _, r := range runs {
			fmt.Fprintf(x.stdout, "%s  %-24s %-9s %4d Credits  %s\n", r.RunNo, r.AppSlug, r.Status, r.CreditCost, r.CreatedAt.UTC().Format(time.RFC3339))
		}
		return nil
	}
	return c.add(x.runsExportCmd())
}

// balanceCmd is `apprun balance`.
func (x *cli) balanceCmd() *command {
	c := newCommand("balance", "", "show your Credits")
	c.about = "Balance shows your account's Credits and how many of its runs are active.\nIt needs APPRUN_API_KEY."
	c.exec = func([]string) error {
		cl, err := apiClient()
		if err != nil {
			return err
		}
		ctx, stop := signalContext()
		defer stop()
		a, err := cl.Balance(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(x.stdout, "%d Credits (%d run(s) active)\n", a.Balance, a.ActiveRuns)
		return nil
	}
	return c
}

// cancelCmd is `apprun cancel <run_no>`.
func (x *cli) cancelCmd() *command {
	c := newCommand("cancel", "<run_no>", "cancel a queued or running run")
	c.about = "Cancel cancels a queued or running run and refunds its Credits; a finished\nrun answers run_already_finished (exit 1). It needs APPRUN_API_KEY."
	c.minArgs, c.maxArgs = 1, 1
	c.exec = func(args []string) error {
		cl, err := apiClient()
		if err != nil {
			return err
		}
		ctx, stop := signalContext()
		defer stop()
		r, err := cl.CancelRun(ctx, args[0])
		if err != nil {
			return err
		}
		refunded := int64(0)
		if r.RefundedCredits != nil {
			refunded = *r.RefundedCredits
		}
		fmt.Fprintf(x.stdout, "%s canceled; %d Credits refunded\n", r.RunNo, refunded)
		return nil
	}
	return c
}

// signalContext ends on SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
}
