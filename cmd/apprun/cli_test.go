package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/apprun/apprun/apps"
	. "github.com/apprun/apprun/node/nodetest"
)

// The test binary is apprun itself when APPRUN_TEST_AS_MAIN=1: the tests
// run it as a process, as a user would, and read its streams and exit code.
func init() {
	if os.Getenv("APPRUN_TEST_AS_MAIN") == "1" {
		main()
		os.Exit(0) // a main that returns succeeded
	}
}

// apprunProcess runs apprun as a process with args, and with env added to
// an environment without the developer's APPRUN_* and model variables.
func apprunProcess(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "APPRUN_") && !strings.HasPrefix(kv, "OPENAI_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(append(cmd.Env, "APPRUN_TEST_AS_MAIN=1"), env...)
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("apprun %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errs.String(), code
}

// apprunIn runs apprun in this process with stdin, as main does.
func apprunIn(stdin string, args ...string) (stdout, stderr string, code int) {
	var out, errs bytes.Buffer
	code = (&cli{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errs}).main(args)
	return out.String(), errs.String(), code
}

// The binary follows Go's conventions (issue 44): help for a command, asked
// any way, goes to stdout and exits 0 (`apprun help serve` printed the
// top-level list, `admin --help` no subcommands, `admin credits --help`
// exited 1); a command line apprun cannot take exits 2 with one line
// saying why and the command's usage on stderr (it exited 1); `apprun apps`
// shows the catalog; an App that does not exist is an error, exit 1.
func TestCLIFollowsGoConventions(t *testing.T) {
	t.Parallel()
	shipped := len(apps.Default())
	for _, c := range []struct {
		args []string
		code int
		// stdout and stderr match these; the other stream is empty unless
		// its pattern is given.
		stdout, stderr string
	}{
		{args: []string{"help", "serve"}, stdout: `(?s)^usage: apprun serve \[flags\]\n.*\n  -addr string\n.*APPRUN_ADDR.*-secure-cookies`},
		{args: []string{"serve", "--help"}, stdout: `(?s)^usage: apprun serve \[flags\]\n.*\n  -addr string\n.*APPRUN_ADDR.*-secure-cookies`},
		{args: []string{"serve", "-h"}, stdout: `(?s)^usage: apprun serve \[flags\]\n.*-secure-cookies`},
		{args: []string{"admin", "--help"}, stdout: `(?s)^usage: apprun admin \[flags\] <command> \[arguments\]\n.*Commands:\n  accounts .*\n  credits .*\n  keys .*\n  prices .*Flags:\n  -token string.*  -url string`},
		{args: []string{"admin", "credits", "--help"}, stdout: `(?s)^usage: apprun admin \[flags\] credits <command> \[arguments\]\n.*Commands:\n  grant   add AMOUNT Credits to an account\n  adjust  correct an account's balance`},
		{args: []string{"runs", "--help"}, stdout: `(?s)^usage: apprun runs \[flags\] \[<command> \[arguments\]\]\n.*Commands:\n  export .*-limit int`},
		{args: []string{"help", "runs", "export"}, stdout: `(?s)^usage: apprun runs \[flags\] export <run_no>\.\.\.\n`},
		{args: []string{"help", "admin", "credits", "grant"}, stdout: `(?s)^usage: apprun admin \[flags\] credits grant \[flags\] ACCOUNT_ID AMOUNT\n.*-reason string`},
		{args: []string{"serve", "--no-such-flag"}, code: 2,
			stderr: `^apprun serve: flag provided but not defined: -no-such-flag\nusage: apprun serve \[flags\]\nRun 'apprun help serve' for details.\n$`},
		{args: []string{"no-such-command"}, code: 2,
			stderr: `(?s)^apprun: unknown command "no-such-command"\nusage: apprun <command> \[arguments\]\n\nCommands:\n  serve .*\n  apps .*Run 'apprun help' for details.\n$`},
		{args: []string{"apps"}, stdout: `(?s)^SLUG +NAME +CREDITS +NEEDS MODEL\n.*\ncold-email-writer +Cold Email Writer +25 +no\n.*\noss-growth +OSS Growth +40 +yes\n`},
		{args: []string{"apps", "cold-email-writer"}, stdout: `(?s)^cold-email-writer: Cold Email Writer\n.*Price: +25 Credits\nNeeds a model: +no\n.*` +
			`FIELD +TYPE +REQUIRED +DEFAULT +DESCRIPTION\n` +
			`product_description +string +yes +What the product is and does\n.*` +
			`cta_goal +string +no +Interest check +The ask each email ends with. One of: Interest check, Meeting, Introduction.\n.*` +
			`Output: a JSON object\n  language +string\n.*  emails +array of object, 3 to 5 items\n    touch +integer\n`},
		{args: []string{"apps", "no-such-app"}, code: 1, stderr: `^apprun: no App "no-such-app": apprun apps lists them\n$`},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := apprunProcess(t, nil, c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.code, stdout, stderr)
			}
			for _, s := range []struct{ name, got, want string }{{"stdout", stdout, c.stdout}, {"stderr", stderr, c.stderr}} {
				switch {
				case s.want == "" && s.got != "":
					t.Errorf("%s not empty:\n%s", s.name, s.got)
				case s.want != "" && !regexp.MustCompile(s.want).MatchString(s.got):
					t.Errorf("%s does not match %s:\n%s", s.name, s.want, s.got)
				}
			}
		})
	}
	// `apprun apps` lists every App, one a line under its header.
	stdout, _, _ := apprunProcess(t, nil, "apps")
	if n := strings.Count(stdout, "\n"); n != shipped+1 {
		t.Errorf("apprun apps printed %d lines for %d Apps", n, shipped)
	}
}

// Every command and subcommand of the table answers its help, asked any of
// three ways, with the same text on stdout naming its own usage, its
// subcommands and its flags, and exit 0.
func TestHelpOfEveryCommandGoesToStdoutAndExitsZero(t *testing.T) {
	var walk func(c *command, path []string)
	seen := 0
	walk = func(c *command, path []string) {
		seen++
		helped, _, code := apprunIn("", append([]string{"help"}, path...)...)
		if code != 0 || !strings.HasPrefix(helped, "usage: "+c.usageLine()+"\n") {
			t.Errorf("apprun help %s: exit %d\n%s", strings.Join(path, " "), code, helped)
		}
		for _, sub := range c.listed() {
			if !strings.Contains(helped, "\n  "+sub.name+" ") {
				t.Errorf("apprun help %s does not list %s:\n%s", strings.Join(path, " "), sub.name, helped)
			}
		}
		c.flags.VisitAll(func(f *flag.Flag) {
			if !strings.Contains(helped, "\n  -"+f.Name) {
				t.Errorf("apprun help %s does not show -%s", strings.Join(path, " "), f.Name)
			}
		})
		for _, h := range []string{"--help", "-h"} {
			stdout, stderr, code := apprunIn("", append(append([]string{}, path...), h)...)
			if code != 0 || stdout != helped || stderr != "" {
				t.Errorf("apprun %s %s: exit %d, stdout %q, stderr %q; want apprun help's", strings.Join(path, " "), h, code, stdout, stderr)
			}
		}
		for _, sub := range c.subs {
			walk(sub, append(append([]string{}, path...), sub.name))
		}
	}
	walk((&cli{}).root(), nil)
	if seen < 20 {
		t.Fatalf("walked %d commands", seen)
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		if stdout, _, code := apprunIn("", args...); code != 0 || !strings.HasPrefix(stdout, "apprun ") || !strings.Contains(stdout, "commit") {
			t.Errorf("apprun %v: exit %d %q", args, code, stdout)
		}
	}
	// A bad variable does not hide the help; it stops the command itself.
	t.Setenv("APPRUN_HEARTBEAT", "banana")
	if _, stderr, code := apprunIn("", "serve", "--help"); code != 0 {
		t.Errorf("serve --help with a bad APPRUN_HEARTBEAT: exit %d %s", code, stderr)
	}
	if _, stderr, code := apprunIn("", "serve"); code != 2 || !strings.HasPrefix(stderr, `apprun serve: config: APPRUN_HEARTBEAT="banana"`) {
		t.Errorf("serve with a bad APPRUN_HEARTBEAT: exit %d %s", code, stderr)
	}
}

// A command line apprun cannot take exits 2, with the reason on the first
// line of stderr and the command's usage under it; nothing runs. Errors
// doing the work (no key, no server, an API error) exit 1.
func TestUsageErrorsExitTwoAndRuntimeErrorsOne(t *testing.T) {
	t.Setenv("APPRUN_URL", "http://127.0.0.1:1") // nothing listens there
	t.Setenv("APPRUN_API_KEY", "")
	for _, c := range []struct {
		args   []string
		code   int
		reason string
		usage  string
	}{
		{[]string{}, 2, "apprun: no command given", "apprun <command> [arguments]"},
		{[]string{"help", "nope"}, 2, `apprun help: unknown command "nope"`, "apprun help [<command>...]"},
		{[]string{"admin"}, 2, "apprun admin: missing command", "apprun admin [flags] <command> [arguments]"},
		{[]string{"admin", "nope"}, 2, `apprun admin: unknown command "nope"`, "apprun admin [flags] <command> [arguments]"},
		{[]string{"admin", "credits", "grant", "acct_1"}, 2, "apprun admin credits grant: missing argument: want ACCOUNT_ID AMOUNT", "apprun admin [flags] credits grant [flags] ACCOUNT_ID AMOUNT"},
		{[]string{"admin", "credits", "grant", "acct_1", "ten"}, 2, `apprun admin credits grant: amount "ten" is not an integer`, "apprun admin [flags] credits grant [flags] ACCOUNT_ID AMOUNT"},
		{[]string{"admin", "credits", "grant", "acct_1", "10"}, 2, "apprun admin credits grant: --reason is required", "apprun admin [flags] credits grant [flags] ACCOUNT_ID AMOUNT"},
		{[]string{"admin", "prices", "set", "cold-email-writer", "5"}, 2, "apprun admin prices set: --reason is required", "apprun admin [flags] prices set [flags] SLUG [CREDITS]"},
		{[]string{"audit", "--from", "2026-01-01"}, 2, "apprun audit: --from and --to bound --account's statement: give --account", "apprun audit [flags]"},
		{[]string{"audit", "--account", "acct_1", "--to", "soon"}, 2, `apprun audit: --to "soon": want an RFC 3339 time or a date like 2026-11-01`, "apprun audit [flags]"},
		{[]string{"admin", "accounts", "create"}, 2, "apprun admin accounts create: --email is required", "apprun admin [flags] accounts create [flags]"},
		{[]string{"admin", "prices", "set", "cold-email-writer"}, 2, "apprun admin prices set: missing argument: want CREDITS or --recalibrating", "apprun admin [flags] prices set [flags] SLUG [CREDITS]"},
		{[]string{"serve", "extra"}, 2, `apprun serve: unexpected argument "extra"`, "apprun serve [flags]"},
		{[]string{"serve", "--heartbeat", "banana"}, 2, `apprun serve: invalid value "banana" for flag -heartbeat: parse error`, "apprun serve [flags]"},
		{[]string{"serve", "--heartbeat", "1ms"}, 2, "apprun serve: heartbeat must be at least 100ms", "apprun serve [flags]"},
		{[]string{"serve", "--ledger-checkpoint-every", "100ms"}, 2, "apprun serve: ledger-checkpoint-every must be at least 1s", "apprun serve [flags]"},
		{[]string{"serve", "--retention-sweep", "0s"}, 2, "apprun serve: retention-sweep must be more than 0", "apprun serve [flags]"},
		{[]string{"audit", "--nope"}, 2, "apprun audit: flag provided but not defined: -nope", "apprun audit [flags]"},
		{[]string{"bench", "extra"}, 2, `apprun bench: unexpected argument "extra"`, "apprun bench [flags]"},
		{[]string{"run", "cold-email-writer"}, 2, "apprun run: --input file.json (or - for standard input) is required", "apprun run [flags] <app-slug>"},
		{[]string{"run", "--input", "in.json"}, 2, "apprun run: missing argument: want <app-slug>", "apprun run [flags] <app-slug>"},
		{[]string{"cancel"}, 2, "apprun cancel: missing argument: want <run_no>", "apprun cancel <run_no>"},
		{[]string{"cancel", "r1", "r2"}, 2, `apprun cancel: unexpected argument "r2"`, "apprun cancel <run_no>"},
		{[]string{"balance", "--limit", "3"}, 2, "apprun balance: flag provided but not defined: -limit", "apprun balance"},
		{[]string{"version", "now"}, 2, `apprun version: unexpected argument "now"`, "apprun version"},
		{[]string{"apps", "a", "b"}, 2, `apprun apps: unexpected argument "b"`, "apprun apps [flags] [<slug>]"},
		{[]string{"balance"}, 1, "apprun: set APPRUN_API_KEY to an API key (the website's API keys page)", ""},
		{[]string{"admin", "--token", "t", "keys", "revoke", "key_1"}, 1, "apprun: Delete \"http://127.0.0.1:1/admin/v1/keys/key_1\": dial tcp", ""},
	} {
		stdout, stderr, code := apprunIn("", c.args...)
		lines := strings.SplitN(stderr, "\n", 3)
		switch {
		case code != c.code || stdout != "" || !strings.HasPrefix(lines[0], c.reason):
			t.Errorf("apprun %s: exit %d, stdout %q, stderr:\n%s\nwant exit %d and %q", strings.Join(c.args, " "), code, stdout, stderr, c.code, c.reason)
		case c.usage != "" && lines[1] != "usage: "+c.usage:
			t.Errorf("apprun %s: usage %q, want %q", strings.Join(c.args, " "), lines[1], c.usage)
		case c.usage == "" && lines[1] != "":
			t.Errorf("apprun %s: more than one line: %q", strings.Join(c.args, " "), stderr)
		}
	}
}

// apprun apps reads APPRUN_APPS_DIR (or --apps-dir) as serve does: a
// definition there adds an App, or replaces a shipped one; a bad one exits
// 1 and names its file.
func TestAppsReadsTheAppsDirectory(t *testing.T) {
	dir := t.TempDir()
	def, err := os.ReadFile("../../apps/catalog/linkedin-post-writer.yaml")
	if err != nil {
		t.Fatal(err)
	}
	mine := strings.Replace(string(def), "slug: linkedin-post-writer", "slug: my-linkedin-writer", 1)
	if err := os.WriteFile(filepath.Join(dir, "mine.yaml"), []byte(mine), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("APPRUN_APPS_DIR", dir)
	stdout, stderr, code := apprunIn("", "apps")
	if code != 0 || !regexp.MustCompile(`\nmy-linkedin-writer +`).MatchString(stdout) || strings.Count(stdout, "\n") != len(apps.Default())+2 {
		t.Fatalf("apps with APPRUN_APPS_DIR: exit %d\n%s%s", code, stdout, stderr)
	}
	if stdout, _, code := apprunIn("", "apps", "my-linkedin-writer"); code != 0 || !strings.HasPrefix(stdout, "my-linkedin-writer: ") {
		t.Fatalf("apps my-linkedin-writer: exit %d\n%s", code, stdout)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.MkdirAll(bad, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "typo.yaml"), []byte(strings.Replace(mine, "price:", "prise:", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	// The flag wins over the variable.
	stdout, stderr, code = apprunIn("", "apps", "--apps-dir", bad)
	if code != 1 || stdout != "" || !strings.Contains(stderr, "typo.yaml") || !strings.Contains(stderr, `unknown field "prise"`) {
		t.Fatalf("a bad definition: exit %d\n%s%s", code, stdout, stderr)
	}
}

func TestCLIRunShowsProgressAndPrintsTheEmails(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	t.Setenv("APPRUN_URL", h.Srv.URL)
	t.Setenv("APPRUN_API_KEY", a.Key)
	in := filepath.Join(t.TempDir(), "input.json")
	if err := os.WriteFile(in, []byte(`{"product_description":"Acme Ledger automates bookkeeping.","target_role":"Agency founders","cta_goal":"Meeting"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, progress, code := apprunIn("", "run", "cold-email-writer", "--input", in)
	if code != 0 {
		t.Fatalf("apprun run: exit %d\n%s", code, progress)
	}
	if !strings.Contains(progress, "25 Credits") || !strings.Contains(progress, "Writing email 1 of 3") ||
		!strings.Contains(progress, "completed") {
		t.Fatalf("progress:\n%s", progress)
	}
	for _, want := range []string{"Wrote a 3-email cold sequence", "── Email 1 · day 0", "── Email 3", "Subject: ", "Open to a 20-minute call"} {
		if !strings.Contains(out, want) {
			t.Fatalf("report lacks %q:\n%s", want, out)
		}
	}

	// --json, before the slug, with the input on standard input.
	out, progress, code = apprunIn(`{"product_description":"p","target_role":"r"}`, "run", "--json", "cold-email-writer", "--input", "-")
	var run struct {
		RunNo  string `json:"run_no"`
		Status string `json:"status"`
		Output struct {
			Emails []any `json:"emails"`
		} `json:"output"`
	}
	if err := json.Unmarshal([]byte(out), &run); err != nil || code != 0 || run.Status != "completed" || len(run.Output.Emails) != 3 {
		t.Fatalf("--json output (exit %d) %v: %s%s", code, err, out, progress)
	}

	// An input the App refuses: the API's error, nothing charged, exit 1.
	if _, stderr, code := apprunIn(`{"product_description":"p"}`, "run", "cold-email-writer", "--input", "-"); code != 1 ||
		!strings.Contains(stderr, "invalid_input") || !strings.Contains(stderr, "target_role") {
		t.Fatalf("refused input: exit %d %s", code, stderr)
	}

	if out, _, code := apprunIn("", "balance"); code != 0 || !strings.HasPrefix(out, "50 Credits") {
		t.Fatalf("apprun balance: exit %d %q", code, out)
	}
	if out, _, code := apprunIn("", "runs", "--limit", "5"); code != 0 || strings.Count(out, "cold-email-writer") != 2 || !strings.Contains(out, run.RunNo) {
		t.Fatalf("apprun runs: exit %d\n%s", code, out)
	}
	held := h.Create(a, RunTestApp("hold"))
	if out, _, code := apprunIn("", "cancel", held); code != 0 || !strings.Contains(out, "canceled; 10 Credits refunded") {
		t.Fatalf("apprun cancel: exit %d %q", code, out)
	}
}
