package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/apprun/apprun/apps"
	"github.com/apprun/apprun/client"
)

// The client commands (`apprun run`, `runs`, `balance`, `cancel`) call a
// running service with APPRUN_API_KEY at APPRUN_URL through package client.

func apiClient() (*client.Client, error) {
	key := os.Getenv("APPRUN_API_KEY")
	if key == "" {
		return nil, errors.New("set APPRUN_API_KEY to an API key (the website's API keys page)")
	}
	return client.New(serverURL(), key), nil
}

// runCommand is `apprun run <slug> --input file.json|- [--json]`: create a
// run, show a progress line while it executes, print the report.
func runCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	inputPath := fs.String("input", "", "the App's input: a JSON file, or - for standard input (required)")
	asJSON := fs.Bool("json", false, "print the finished run as JSON")
	brand := fs.String("brand-context", "", "a brand context id to write for")
	if wantsHelp(args, "apprun run <app-slug> --input file.json|- [--json] [--brand-context id]") {
		return nil
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return errors.New("usage: apprun run <app-slug> --input file.json|- [--json]")
	}
	slug := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *inputPath == "" {
		return errors.New("run: --input file.json (or - for standard input) is required")
	}
	var raw []byte
	var err error
	if *inputPath == "-" {
		raw, err = io.ReadAll(stdin)
	} else {
		raw, err = os.ReadFile(*inputPath)
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
	created, err := c.CreateRun(ctx, slug, input, &client.CreateOptions{BrandContextID: *brand})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s: %d Credits\n", created.RunNo, created.CreditCost)
	progress := newProgressLine(stderr)
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
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(run)
	}
	printRun(stdout, run)
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

// runsCommand is `apprun runs [--limit N]`.
func runsCommand(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("runs", flag.ContinueOnError)
	limit := fs.Int("limit", 20, "how many runs, newest first (1 to 100)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, err := apiClient()
	if err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	runs, _, err := c.ListRuns(ctx, *limit, "")
	if err != nil {
		return err
	}
	for _, r := range runs {
		fmt.Fprintf(stdout, "%s  %-24s %-9s %4d Credits  %s\n", r.RunNo, r.AppSlug, r.Status, r.CreditCost, r.CreatedAt.UTC().Format(time.RFC3339))
	}
	return nil
}

// balanceCommand is `apprun balance`.
func balanceCommand(args []string, stdout io.Writer) error {
	if wantsHelp(args, "apprun balance (with APPRUN_API_KEY)") {
		return nil
	}
	c, err := apiClient()
	if err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	a, err := c.Balance(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d Credits (%d run(s) active)\n", a.Balance, a.ActiveRuns)
	return nil
}

// cancelCommand is `apprun cancel <run_no>`.
func cancelCommand(args []string, stdout io.Writer) error {
	if wantsHelp(args, "apprun cancel <run_no> (with APPRUN_API_KEY)") {
		return nil
	}
	if len(args) != 1 {
		return errors.New("usage: apprun cancel <run_no>")
	}
	c, err := apiClient()
	if err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	r, err := c.CancelRun(ctx, args[0])
	if err != nil {
		return err
	}
	refunded := int64(0)
	if r.RefundedCredits != nil {
		refunded = *r.RefundedCredits
	}
	fmt.Fprintf(stdout, "%s canceled; %d Credits refunded\n", r.RunNo, refunded)
	return nil
}

// signalContext ends on SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
}
