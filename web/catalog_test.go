package web_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	. "github.com/apprun/apprun/node/nodetest"

	"github.com/apprun/apprun/llm/llmtest"
)

// cardNames are the App names on a catalog page, in order, by category.
func cardNames(body string) map[string][]string {
	out := map[string][]string{}
	for _, sec := range strings.Split(body, `<section aria-labelledby="`)[1:] {
		cat := sec[:strings.IndexByte(sec, '"')]
		for _, m := range regexp.MustCompile(`<h3><a href="/apps/[^"]+">([^<]+)</a></h3>`).FindAllStringSubmatch(sec, -1) {
			out[cat] = append(out[cat], m[1])
		}
	}
	return out
}

func TestTheCatalogIsByNameWithinCategoriesAndSearchable(t *testing.T) {
	t.Parallel()
	fake := llmtest.New()
	t.Cleanup(fake.Close)
	h := Start(t, WithLimits(NoLimits), WithModel(fake)) // a model makes every App runnable
	b := h.Browser(t)
	for _, path := range []string{"/", "/apps"} {
		p := b.Get(path)
		groups := cardNames(p.Body)
		if len(groups) < 2 {
			t.Fatalf("%s: %d categories", path, len(groups))
		}
		n := 0
		for cat, names := range groups {
			n += len(names)
			if !slices.IsSortedFunc(names, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) }) {
				t.Errorf("%s: %s is not by name: %v", path, cat, names)
			}
		}
		if !strings.Contains(p.Body, `<div id="app-none" hidden>`) {
			t.Errorf("%s: the no-match message is not hidden", path)
		}
		if !strings.Contains(p.Body, `id="app-search"`) || !strings.Contains(p.Body, `data-search="`) {
			t.Errorf("%s: no search box, or cards without their search text", path)
		}
		if n < 60 || !strings.Contains(p.Body, fmt.Sprintf(">%d Apps<", n)) {
			t.Errorf("%s: %d Apps shown, or not counted", path, n)
		}
	}
	// The guide is above the Apps on the home page.
	home := b.Get("/").Body
	if g, a := strings.Index(home, "A first run in three steps"), strings.Index(home, `id="app-search"`); g < 0 || g > a {
		t.Errorf("the first-run guide is not above the Apps (%d, %d)", g, a)
	}

	// Without script, ?q= narrows on the server: every word must match.
	p := b.Get("/apps?q=battlecard")
	all := cardNames(p.Body)
	var names []string
	for _, ns := range all {
		names = append(names, ns...)
	}
	if len(names) != 1 || names[0] != "Sales Battlecard" || !strings.Contains(p.Body, "1 App matches") {
		t.Fatalf("?q=battlecard: %v", names)
	}
	if p := b.Get("/apps?q=email+linkedin+nothing-like-this"); len(cardNames(p.Body)) != 0 || !strings.Contains(p.Body, "No App matches") {
		t.Fatalf("a search that matches nothing: %v", cardNames(p.Body))
	}
	if p := b.Get("/apps?q=%3Cscript%3E"); strings.Contains(p.Body, "<script>") {
		t.Fatal("the query is echoed unescaped")
	}
	if p := b.Get("/apps?q=%FF%FEbattle"); !utf8.ValidString(p.Body) || !strings.Contains(p.Body, "1 App matches “battle”") {
		t.Fatal("a query that is not UTF-8 is echoed as it came")
	}
	if p := b.Get("/apps?q=battlecard"); !regexp.MustCompile(`<a href="\?">Show all \d\d Apps</a>`).MatchString(p.Body) {
		t.Fatal("no link back to all the Apps, counted")
	}
}
