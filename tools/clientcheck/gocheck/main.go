// Command gocheck is the Go side of the client check (../run): a proxy
// that cuts an event stream, and Go SSE client libraries following a run
// through it. It does not import apprun: it is a client, like any other.
package main

import (
	"fmt"
	"os"

	"apprun.dev/clientcheck/check"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: gocheck proxy|r3labs|gosse ARGS")
		os.Exit(2)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "proxy":
		err = proxy(args)
	case "r3labs":
		err = r3labs(check.ParseArgs(args))
	case "gosse":
		err = gosse(check.ParseArgs(args))
	default:
		err = fmt.Errorf("unknown subcommand %q", cmd)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "gocheck %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
