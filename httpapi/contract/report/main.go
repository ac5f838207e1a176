// Command report adds up the contract reports the test packages wrote
// into a directory (nodetest.Main, with APPRUN_CONTRACT_REPORT set to it),
// prints the (operation, status) pairs validated, and fails when a
// documented success answer was seen by no test of the suite.
//
//	go run ./httpapi/contract/report DIR
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/apprun/apprun/httpapi/contract"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./httpapi/contract/report DIR")
		os.Exit(2)
	}
	r, err := contract.Sum(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "contract report:", err)
		os.Exit(1)
	}
	if len(r.Seen) == 0 {
		fmt.Fprintln(os.Stderr, "contract report: no report in", os.Args[1])
		os.Exit(1)
	}
	r.Print(os.Stdout)
	if missing := r.Missing(); len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "contract: no test saw %s\n", strings.Join(missing, ", "))
		os.Exit(1)
	}
}
