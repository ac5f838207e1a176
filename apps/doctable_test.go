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

// catalogTable is the README's catalog: every shipped App by category
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
	tableStart = "<!-- catalog table: made by TestTheREADMEListsTheCatalog; APPRUN_UPDATE_DOCS=1 go test ./apps rewrites it -->\n"
	tableEnd   = "<!-- end of catalog table -->"
)

// The README's catalog table is the shipped catalog: no App missing,
// no price or category that differs.
func TestTheREADMEListsTheCatalog(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok1 := strings.Cut(string(readme), tableStart)
	_, after, ok2 := strings.Cut(rest, tableEnd)
	if !ok1 || !ok2 {
		t.Fatal("README.md has no catalog table between its markers")
	}
	want := catalogTable(shippedDefinitions(t))
	if os.Getenv("APPRUN_UPDATE_DOCS") == "1" {
		if err := os.WriteFile("../README.md", []byte(before+tableStart+want+tableEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if rest[:len(rest)-len(after)-len(tableEnd)] != want {
		t.Fatalf("README.md's catalog table differs from the catalog; run APPRUN_UPDATE_DOCS=1 go test ./apps -run TestTheREADMEListsTheCatalog\nwant:\n%s", want)
	}
}
