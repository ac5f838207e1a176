package apps

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"codeberg.org/readeck/go-readability/v2"
	"golang.org/x/net/html"
)

// slowPage is a page built to be slow to read: depth nested <div>s, then
// <p>s up to size bytes.
func slowPage(depth, size int, text string) []byte {
	var b strings.Builder
	b.WriteString("<html><head><title>slow</title></head><body>")
	b.WriteString(strings.Repeat("<div>", depth))
	for b.Len() < size {
		b.WriteString("<p>" + text + "</p>")
	}
	return []byte(b.String())
}

// shape counts a tree's elements, its depth and its text.
func shape(n *html.Node, depth int) (elements, deepest, text int) {
	deepest = depth
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		switch c.Type {
		case html.ElementNode:
			e, d, x := shape(c, depth+1)
			elements, deepest, text = elements+e+1, max(deepest, d), text+x
		case html.TextNode:
			text += len(c.Data)
		}
	}
	return elements, deepest, text
}

// Readability is given at most htmlMaxElements elements, htmlMaxText bytes
// of text and htmlMaxDepth levels, whatever the page: its work is bounded
// by them, and a 2 MiB page built to be slow took it 11 to 36 s whole.
func TestAPageIsGivenToReadabilityBounded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		page []byte
	}{
		{"nested divs around many paragraphs", slowPage(500, 2<<20, "x")},
		{"much text, deep", slowPage(64, 2<<20, strings.Repeat("word ", 200))},
		{"one text of 2 MiB", []byte("<html><body><div><p>" + strings.Repeat("é", 1<<20) + "</p></div></body></html>")},
		// The parser reopens the 400 open <b>s in every <p>: 40 KB made
		// 3.6 million nodes.
		{"formatting reopened in every block", []byte("<p>" + strings.Repeat("<b id=i>", 400) + "</p>" + strings.Repeat("<p>x", 9000))},
	} {
		doc, err := boundedDocument(context.Background(), tc.page)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		elements, depth, text := shape(doc, 0)
		// (+3: html, head and body, which the parser adds; text gains a line
		// break for each element whose text moved up a level.)
		// (Some text, but where the cut comes before any: the last case.)
		if elements > htmlMaxElements+3 || depth > htmlMaxDepth || text > htmlMaxText+htmlMaxElements ||
			(text == 0 && !strings.HasPrefix(tc.name, "formatting")) {
			t.Errorf("%s: readability is given %d elements, %d levels, %d bytes of text; want at most %d, %d and %d (and some text)",
				tc.name, elements, depth, text, htmlMaxElements, htmlMaxDepth, htmlMaxText)
		}
	}
}

// The bounds leave an ordinary page as it was: its main text is read as
// readability reads it whole.
func TestTheBoundsLeaveAnOrdinaryPageAsItWas(t *testing.T) {
	t.Parallel()
	page := []byte(`<html><head><title>Pricing</title></head><body><nav>Home</nav><article><h1>Pricing</h1>` +
		strings.Repeat(`<section><div><div><p>Starter costs $29 a month for one user and includes invoicing and receipts.</p></div></div></section>`, 40) +
		`</article><footer>Terms</footer></body></html>`)
	u, _ := url.Parse("https://example.com/pricing")
	got, err := pageOf(context.Background(), (&Env{}).withDefaults(), page, u)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(strings.NewReader(string(page)))
	if err != nil {
		t.Fatal(err)
	}
	elements, depth, text := shape(doc, 0)
	if elements > htmlMaxElements || depth > htmlMaxDepth || text > htmlMaxText {
		t.Fatalf("the page is not ordinary: %d elements, %d levels, %d bytes of text", elements, depth, text)
	}
	p := readability.NewParser()
	art, err := p.Parse(strings.NewReader(string(page)), u)
	if err != nil {
		t.Fatal(err)
	}
	var whole strings.Builder
	if err := art.RenderText(&whole); err != nil {
		t.Fatal(err)
	}
	if want, _ := cut(whole.String(), sourceTextLimit); got.Text != want || !strings.Contains(got.Text, "Starter costs $29") {
		t.Fatalf("main text read bounded:\n%q\nread whole:\n%q", got.Text, want)
	}
}

// Text below the deepest level is kept, in order, by the ancestor at it.
func TestTextBelowTheDeepestLevelIsKept(t *testing.T) {
	t.Parallel()
	page := "<html><body>" + strings.Repeat("<div>", 60) + "<p>first</p><p>second <b>bold</b></p><script>no()</script>" + "</body></html>"
	doc, err := boundedDocument(context.Background(), []byte(page))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if got := b.String(); got != "first\nsecond \nbold" {
		t.Fatalf("text %q, want first, second and bold in order, a line apart, and no script", got)
	}
}

// A parse stops when its run's context ends.
func TestACanceledParseStops(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := boundedDocument(ctx, slowPage(500, 2<<20, "x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("boundedDocument on a canceled context: %v, want context.Canceled", err)
	}
	r := &ctxReader{ctx: ctx, r: strings.NewReader("abc")}
	if _, err := r.Read(make([]byte, 8)); !errors.Is(err, context.Canceled) {
		t.Fatalf("ctxReader on a canceled context: %v", err)
	}
}
