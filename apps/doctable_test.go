package apps

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

var sourceWords = map[string]string{
	"web_page": "a web page", "sitemap": "a sitemap", "feed": "an RSS or Atom feed",
	"changelog": "a changelog", "github_repo": "a GitHub repository",
}

// catalogTable is docs/apps.md's catalog: every shipped App by category
// (in the catalog's order), with its price and the source it reads.
func catalogTable(defs map[string]Definition) string {
	list := make([]Definition, 0, len(defs))
	for _, d := range defs {
		list = append(list, d)
	}
	slices.SortFunc(list, func(a, b Definition) int {
		if c := slices.Index(Categories, a.Category) - slices.Index(Categories, b.Category); c != 0 {
			return c
		}
		return strings.Compare(a.Slug, b.Slug)
	})
	var b strings.Builder
	b.WriteString("| App | Category | Price | Reads | Without a model |\n|---|---|---|---|---|\n")
	for _, d := range list {
		reads := ""
		for _, s := range d.Steps {
			if w, ok := sourceWords[s.Tool]; ok {
				reads = w
			}
		}
		model := "needs one"
		if !d.NeedsModel {
			model = "runs (built-in writer)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %d | %s | %s |\n", d.Slug, d.Category, d.Price, reads, model)
	}
	return b.String()
}

const (
	tableDoc   = "../docs/apps.md"
	tableStart = "<!-- catalog table: made by TestTheDocsListTheCatalog; APPRUN_UPDATE_DOCS=1 go test ./apps rewrites it -->\n"
	tableEnd   = "<!-- end of catalog table -->"
)

// docs/apps.md's catalog table is the shipped catalog: no App missing,
// no price or category that differs.
func TestTheDocsListTheCatalog(t *testing.T) {
	doc, err := os.ReadFile(tableDoc)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok1 := strings.Cut(string(doc), tableStart)
	_, after, ok2 := strings.Cut(rest, tableEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s has no catalog table between its markers", tableDoc)
	}
	want := catalogTable(shippedDefinitions(t))
	if os.Getenv("APPRUN_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(tableDoc, []byte(before+tableStart+want+tableEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if rest[:len(rest)-len(after)-len(tableEnd)] != want {
		t.Fatalf("%s's catalog table differs from the catalog; run APPRUN_UPDATE_DOCS=1 go test ./apps -run TestTheDocsListTheCatalog\nwant:\n%s", tableDoc, want)
	}
}
