// Command overlay writes, into the directory it is given, a copy of each
// of apprun's Go files (not tests, not tools/) whose every function
// begins by calling tools/walk/trace.Enter, and prints the -overlay file
// that makes go build use them (make walk). It inserts on existing lines
// only, so a position in a panic or a profile is the source's.
package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

const tracePkg = "github.com/apprun/apprun/tools/walk/trace"

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: overlay DIR > overlay.json")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "overlay:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	replace := map[string]string{}
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata" || path == "tools" || path == "bin" || path == "data") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		traced, err := instrument(filepath.ToSlash(path), src)
		if err != nil || traced == nil {
			return err
		}
		copyPath := filepath.Join(out, path)
		if err := os.MkdirAll(filepath.Dir(copyPath), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(copyPath, traced, 0o600); err != nil {
			return err
		}
		abs, err := filepath.Abs(copyPath)
		if err != nil {
			return err
		}
		replace[filepath.Join(root, path)] = abs
		return nil
	})
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{"Replace": replace})
}

// instrument returns src with a call of trace.Enter at the start of each
// function body and function literal, on the line of its opening brace,
// and the import on the package clause's line; nil when src has no
// function.
func instrument(path string, src []byte) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	type insert struct {
		at   int
		text string
	}
	var ins []insert
	enter := func(body *ast.BlockStmt, name string) {
		at := fset.Position(body.Lbrace).Offset + 1
		ins = append(ins, insert{at, " __walktrace.Enter(" + strconv.Quote(path) + ", " + strconv.Quote(name) + ");"})
	}
	for _, d := range f.Decls {
		name := "var" // a function literal in a package-level declaration
		if fn, ok := d.(*ast.FuncDecl); ok {
			if fn.Body == nil {
				continue
			}
			name = fn.Name.Name
		}
		// The function and each function literal in it, named as the
		// function (as go tool cover -func counts them).
		ast.Inspect(d, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				enter(n.Body, name)
			case *ast.FuncLit:
				enter(n.Body, name)
			}
			return true
		})
	}
	if len(ins) == 0 {
		return nil, nil
	}
	// After the package name: "package x; import __walktrace "…"".
	ins = append(ins, insert{fset.Position(f.Name.End()).Offset, "; import __walktrace " + strconv.Quote(tracePkg)})
	sort.Slice(ins, func(i, j int) bool { return ins[i].at > ins[j].at })
	out := append([]byte(nil), src...)
	for _, in := range ins {
		out = append(out[:in.at], append([]byte(in.text), out[in.at:]...)...)
	}
	return out, nil
}
