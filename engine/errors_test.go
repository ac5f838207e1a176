package engine_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/engine/internal/errorsgen"
)

// errors_generated.go is what errorsgen makes of errors.json today: an entry
// added, changed or removed without `go generate ./engine` fails here.
func TestErrorsGeneratedIsCurrent(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("errors.json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := errorsgen.Generate(src)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("errors_generated.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("errors_generated.go is not what errors.json makes: run go generate ./engine")
	}
}

// TestCodesAreTheTable: every entry is found by its code, and a code with
// no entry is not.
func TestCodesAreTheTable(t *testing.T) {
	t.Parallel()
	codes := engine.Codes()
	if len(codes) == 0 {
		t.Fatal("the error table is empty")
	}
	for _, want := range codes {
		if got, ok := want.Code.Info(); !ok || got != want {
			t.Errorf("%s: Info() = %+v, %v; want %+v", want.Code, got, ok, want)
		}
	}
	if info, ok := engine.Code("no_such_code").Info(); ok {
		t.Errorf("a code with no entry has one: %+v", info)
	}
}

// TestEveryCodeIsInTheTable reads the module's Go sources (tests left out)
// for the error codes written there: a constant of type Code, a
// conversion Code("…") and an Error{Code: "…"}. Each must be an entry of
// errors.json, so that none is answered without its status, message and
// docs. (A bare literal passed where a Code is expected is not seen: that
// would take type-checking the module.)
func TestEveryCodeIsInTheTable(t *testing.T) {
	t.Parallel()
	found := codesWritten(t, "..")
	consts := 0
	for _, c := range found {
		if c.kind == "constant" {
			consts++
		}
		if _, ok := engine.Code(c.code).Info(); !ok {
			t.Errorf("%s: %s %q has no entry in engine/errors.json (add one, run go generate ./engine, document it in docs/api.md)", c.pos, c.kind, c.code)
		}
	}
	// The scan sees the generated constants, or it sees nothing.
	if consts < len(engine.Codes()) {
		t.Fatalf("the scan found %d constants of type Code, fewer than the table's %d entries", consts, len(engine.Codes()))
	}
}

type writtenCode struct {
	pos, kind, code string
}

// codesWritten lists the error codes written as string literals in the Go
// files under root, test files and testdata left out.
func codesWritten(t *testing.T, root string) []writtenCode {
	t.Helper()
	fset := token.NewFileSet()
	var out []writtenCode
	lit := func(e ast.Expr) (string, bool) {
		b, ok := e.(*ast.BasicLit)
		if !ok || b.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(b.Value)
		return s, err == nil
	}
	// isType reports whether e names engine's type name (Code, Error), in
	// package engine or from outside it.
	isType := func(e ast.Expr, pkg, name string) bool {
		switch x := e.(type) {
		case *ast.Ident:
			return pkg == "engine" && x.Name == name
		case *ast.SelectorExpr:
			id, ok := x.X.(*ast.Ident)
			return ok && id.Name == "engine" && x.Sel.Name == name
		}
		return false
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg := f.Name.Name
		add := func(n ast.Node, kind, code string) {
			out = append(out, writtenCode{fset.Position(n.Pos()).String(), kind, code})
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.ValueSpec:
				if x.Type != nil && isType(x.Type, pkg, "Code") {
					for _, v := range x.Values {
						if s, ok := lit(v); ok {
							add(v, "constant", s)
						}
					}
				}
			case *ast.CallExpr:
				if len(x.Args) == 1 && isType(x.Fun, pkg, "Code") {
					if s, ok := lit(x.Args[0]); ok {
						add(x, "conversion", s)
					}
				}
			case *ast.CompositeLit:
				if x.Type != nil && isType(x.Type, pkg, "Error") {
					for _, el := range x.Elts {
						if kv, ok := el.(*ast.KeyValueExpr); ok {
							if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Code" {
								if s, ok := lit(kv.Value); ok {
									add(kv, "Error literal", s)
								}
							}
						}
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
