package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// A command is one apprun command or subcommand: a row of the command
// table (main.go). Every command gets its help, its usage errors and its
// exit code from here, the same way (the go command's manners):
//
//   - `apprun help <command>...`, `<command> --help` and `-h` print the
//     command's usage line, what it does, its subcommands and its flags to
//     stdout, and exit 0;
//   - a usage error (an unknown command or flag, a flag's bad value, a
//     missing or extra argument) prints one line saying why and the
//     command's usage to stderr, and exits 2;
//   - any other error (the server unreachable, an API error, a bad App
//     definition) prints "apprun: " and the error to stderr, and exits 1.
//
// The standard library's flag package parses; each flag may be bound to
// its environment variable (envFlags), a flag given on the command line
// winning.
type command struct {
	name    string
	args    string // what follows the flags on the usage line: "<run_no>"
	summary string // one line, in its parent's list of commands
	about   string // what its help says below the usage line
	// minArgs and maxArgs bound its arguments (maxArgs < 0: no bound); a
	// command with subcommands gets the ones after the subcommand's name.
	minArgs, maxArgs int
	subs             []*command
	hidden           bool // run by apprun itself (bench's servers): not listed
	flags            *flag.FlagSet
	env              *envFlags
	// exec does the work with the arguments left after the flags. Nil for
	// a command that only groups subcommands.
	exec   func(args []string) error
	parent *command
}

// newCommand is a command with an empty flag set: flags print nothing
// themselves, their errors come back to execute.
func newCommand(name, args, summary string) *command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &command{name: name, args: args, summary: summary, flags: fs, env: newEnvFlags(fs)}
}

// add makes subs the command's subcommands.
func (c *command) add(subs ...*command) *command {
	for _, s := range subs {
		s.parent = c
	}
	c.subs = append(c.subs, subs...)
	return c
}

// path is the command as typed: "apprun admin credits grant".
func (c *command) path() string {
	if c.parent == nil {
		return c.name
	}
	return c.parent.path() + " " + c.name
}

func (c *command) sub(name string) *command {
	for _, s := range c.subs {
		if s.name == name {
			return s
		}
	}
	return nil
}

func (c *command) listed() []*command {
	var out []*command
	for _, s := range c.subs {
		if !s.hidden {
			out = append(out, s)
		}
	}
	return out
}

func (c *command) hasFlags() bool {
	n := 0
	c.flags.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// usageLine is "apprun admin [flags] <command> [arguments]", or "apprun
// admin [flags] credits grant ACCOUNT_ID AMOUNT": a parent's flags go
// before its subcommand's name; a command that also runs alone has its
// command in brackets ("apprun runs [flags] [<command> [arguments]]").
// The root's -version is left out.
func (c *command) usageLine() string {
	s := c.name
	if c.parent != nil {
		s = c.parent.name
		if c.parent.parent != nil {
			s = strings.TrimSuffix(strings.TrimSuffix(c.parent.usageLine(), " [<command> [arguments]]"), " <command> [arguments]")
		}
		s += " " + c.name
		if c.hasFlags() {
			s += " [flags]"
		}
	}
	switch {
	case len(c.listed()) > 0 && c.exec != nil && c.parent != nil:
		s += " [<command> [arguments]]" // it runs alone too: apprun runs
	case len(c.listed()) > 0:
		s += " <command> [arguments]"
	}
	if c.args != "" {
		s += " " + c.args
	}
	return s
}

// usage is what a usage error shows under its reason: the usage line, the
// subcommands, and where the rest is.
func (c *command) usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s\n", c.usageLine())
	if len(c.listed()) > 0 {
		c.commandList(w)
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "Run '%s' for details.\n", c.helpCommand())
}

// help is the command's whole help: what `apprun help <command>` and
// `<command> --help` print.
func (c *command) help(w io.Writer) {
	fmt.Fprintf(w, "usage: %s\n", c.usageLine())
	about := c.about
	if about == "" && c.summary != "" {
		about = strings.ToUpper(c.summary[:1]) + c.summary[1:] + "."
	}
	if about != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(about))
	}
	c.commandList(w)
	if c.hasFlags() {
		fmt.Fprintln(w, "\nFlags:")
		c.flags.SetOutput(w)
		c.flags.PrintDefaults()
		c.flags.SetOutput(io.Discard)
	}
	if len(c.listed()) > 0 {
		fmt.Fprintf(w, "\nRun '%s <command>' for a command's usage, subcommands and flags.\n", c.helpCommand())
	}
}

func (c *command) commandList(w io.Writer) {
	subs := c.listed()
	if len(subs) == 0 {
		return
	}
	fmt.Fprintln(w, "\nCommands:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range subs {
		fmt.Fprintf(tw, "  %s\t%s\n", s.name, s.summary)
	}
	tw.Flush()
}

// helpCommand is "apprun help admin credits".
func (c *command) helpCommand() string {
	if c.parent == nil {
		return c.name + " help"
	}
	root := c
	for root.parent != nil {
		root = root.parent
	}
	return root.name + " help" + strings.TrimPrefix(c.path(), root.name)
}

// execute parses args for c and runs c or the subcommand they name.
func (c *command) execute(args []string) error {
	rest, err := c.parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return &helpRequest{c}
	}
	if err != nil {
		return &usageError{c, err}
	}
	if len(rest) > 0 {
		if s := c.sub(rest[0]); s != nil {
			return s.execute(rest[1:])
		}
	}
	if c.exec == nil {
		if len(rest) == 0 {
			return &usageError{c, errors.New("missing command")}
		}
		return &usageError{c, fmt.Errorf("unknown command %q", rest[0])}
	}
	switch {
	case len(rest) < c.minArgs:
		return &usageError{c, fmt.Errorf("missing argument: want %s", c.args)}
	case c.maxArgs >= 0 && len(rest) > c.maxArgs:
		return &usageError{c, fmt.Errorf("unexpected argument %q", rest[c.maxArgs])}
	}
	err = c.exec(rest)
	var u *usageError
	if errors.As(err, &u) && u.cmd == nil {
		u.cmd = c
	}
	return err
}

// parse reads the command's flags, and the variables bound to them, from
// args and returns the arguments left. A command with subcommands stops
// at its first argument, the subcommand's name; any other takes its flags
// anywhere among its arguments (apprun run <slug> --input file), up to a
// "--".
func (c *command) parse(args []string) ([]string, error) {
	if err := c.env.parse(args); err != nil {
		return nil, err
	}
	rest := c.flags.Args()
	if len(c.subs) > 0 {
		return rest, nil
	}
	var operands []string
	for len(rest) > 0 {
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(operands, rest...), nil
		}
		operands = append(operands, rest[0])
		args = rest[1:]
		if err := c.flags.Parse(args); err != nil {
			return nil, err
		}
		rest = c.flags.Args()
	}
	return operands, nil
}

// usageError is a command line apprun cannot take: exit 2.
type usageError struct {
	cmd *command // nil until execute names the command that refused it
	err error
}

// usagef is a usage error for a command's exec to return.
func usagef(format string, a ...any) error {
	return &usageError{err: fmt.Errorf(format, a...)}
}

// Error is "apprun serve: flag provided but not defined: -x", without the
// command's name twice ("apprun serve: serve: ...").
func (e *usageError) Error() string {
	return e.cmd.path() + ": " + strings.TrimPrefix(e.err.Error(), e.cmd.name+": ")
}

func (e *usageError) Unwrap() error { return e.err }

// helpRequest is a request for a command's help: printed to stdout, exit 0.
type helpRequest struct{ cmd *command }

func (h *helpRequest) Error() string { return h.cmd.path() + ": help requested" }
