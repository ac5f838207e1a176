// Command errorsgen writes engine/errors_generated.go from engine/errors.json
// (package errorsgen says what they hold). engine/errors.go runs it:
//
//	go generate ./engine
package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/apprun/apprun/engine/internal/errorsgen"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: errorsgen errors.json errors_generated.go")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "errorsgen:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	src, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	code, err := errorsgen.Generate(src)
	if err != nil {
		return err
	}
	if old, err := os.ReadFile(out); err == nil && bytes.Equal(old, code) {
		return nil
	}
	return os.WriteFile(out, code, 0o644)
}
