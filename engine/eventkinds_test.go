package engine_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// runEventKinds are the run event kinds event.go declares: each exported
// constant of type RunEventType, by its wire name.
func runEventKinds(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "event.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "RunEventType" || !v.Names[0].IsExported() {
				continue
			}
			wire, _ := strconv.Unquote(v.Values[0].(*ast.BasicLit).Value)
			kinds[wire] = v.Names[0].Name
		}
	}
	if len(kinds) < 5 {
		t.Fatalf("found %d run event kinds in event.go: the parse is wrong", len(kinds))
	}
	return kinds
}

// The files docs/architecture.md says a new run event kind touches exist,
// and every kind a stream sends is in the two of them that describe the
// stream to clients: docs/api.md's table and the OpenAPI document. A kind
// added without them fails here.
func TestEveryRunEventKindIsWhereArchitectureSays(t *testing.T) {
	t.Parallel()
	arch, err := os.ReadFile(filepath.Join("..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(arch)
	start := strings.Index(doc, "### Adding a run event kind")
	if start < 0 {
		t.Fatal(`docs/architecture.md has no "### Adding a run event kind"`)
	}
	section := doc[start:]
	if end := strings.Index(section[4:], "\n#"); end >= 0 {
		section = section[:end+4]
	}
	paths := regexp.MustCompile("`([a-z/_]+\\.(go|md|js))`").FindAllStringSubmatch(section, -1)
	if len(paths) < 6 {
		t.Fatalf("the section lists %d files", len(paths))
	}
	for _, p := range paths {
		if _, err := os.Stat(filepath.Join("..", p[1])); err != nil {
			t.Errorf("docs/architecture.md lists %s: %v", p[1], err)
		}
	}
	api, err := os.ReadFile(filepath.Join("..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	openapi, err := os.ReadFile(filepath.Join("..", "httpapi", "openapi_schemas.go"))
	if err != nil {
		t.Fatal(err)
	}
	for wire, name := range runEventKinds(t) {
		if name == "RunCreated" || name == "RunFenced" {
			continue // never streamed: a run's first event, an admission's fence
		}
		if !strings.Contains(string(api), "| `"+wire+"` |") {
			t.Errorf("%s (%q) has no row in docs/api.md's table of events", name, wire)
		}
		if !strings.Contains(string(openapi), strconv.Quote(wire)+":") {
			t.Errorf("%s (%q) is not in the OpenAPI document (httpapi/openapi_schemas.go)", name, wire)
		}
	}
}
