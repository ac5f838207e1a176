package main

import (
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// The copy records every function's and function literal's entry, parses,
// and keeps every line where it was (a panic's or profile's position is
// the source's).
func TestInstrumentKeepsLinesAndEntersEveryFunction(t *testing.T) {
	src := "// Package p.\npackage p\n\nimport \"fmt\"\n\nvar f = func() {}\n\nfunc (t T) M() {\n\tgo func() { fmt.Println() }()\n}\n\ntype T int\n\nfunc decl()\n"
	out, err := instrument("p/p.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parser.ParseFile(token.NewFileSet(), "p.go", out, 0); err != nil {
		t.Fatalf("the copy does not parse: %v\n%s", err, out)
	}
	if got, want := strings.Count(string(out), "\n"), strings.Count(src, "\n"); got != want {
		t.Fatalf("%d lines, want %d:\n%s", got, want, out)
	}
	for _, want := range []string{`__walktrace.Enter("p/p.go", "var")`, `__walktrace.Enter("p/p.go", "M")`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("no %s in:\n%s", want, out)
		}
	}
	if n := strings.Count(string(out), "__walktrace.Enter("); n != 3 {
		t.Errorf("%d entries recorded, want 3 (var's literal, M, M's literal; decl has no body):\n%s", n, out)
	}
	if none, _ := instrument("q.go", []byte("package q\n\ntype T int\n")); none != nil {
		t.Errorf("a file with no function was copied: %s", none)
	}
}
