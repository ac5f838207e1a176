package apps

import (
	"bytes"
	"context"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
)

// readability finds a page's main text by scoring its elements, and its
// cost grows with the elements times their depth times their text: a 2 MiB
// page of 500 nested <div>s around 260,000 <p>s took 11 to 36 s of CPU,
// and ignored the run's cancel. A page is therefore given to it bounded:
// its first htmlMaxElements elements and htmlMaxText bytes of text (more
// than a model is ever shown: sourceTextLimit), and no element deeper than
// htmlMaxDepth (deeper ones give their text to their ancestor at that
// depth). What comes before readability is linear in the page's bytes and
// checks ctx every few KiB.
const (
	htmlMaxElements = 10000
	htmlMaxText     = 256 << 10
	htmlMaxDepth    = 48
)

// boundedDocument parses body into the tree readability is given (above).
func boundedDocument(ctx context.Context, body []byte) (*html.Node, error) {
	end, err := htmlCut(ctx, body)
	if err != nil {
		return nil, err
	}
	doc, err := html.Parse(&ctxReader{ctx: ctx, r: bytes.NewReader(body[:end])})
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	flatten(doc, htmlMaxDepth)
	return doc, nil
}

// htmlCut is where body's first htmlMaxElements elements and htmlMaxText
// bytes of text (outside scripts and styles) end: one pass of the
// tokenizer, which is linear. The HTML parser closes what the cut leaves
// open.
//
// An element the page writes may be more than one the parser makes: it
// reopens the formatting elements still open (a, b, em, font…) before
// every text and element that follows a block that closed them (the
// spec's "reconstruct the active formatting elements"), so 400 unclosed
// <b>s before 9,000 <p>s, 40 KB, made 3.6 million nodes and 577 MiB. So
// each text and element counts as the formatting elements open before
// it, too: at most the nodes the parser can make of it.
func htmlCut(ctx context.Context, body []byte) (int, error) {
	z := html.NewTokenizer(bytes.NewReader(body))
	off, nodes, text := 0, 0, 0
	open := 0    // formatting elements opened and not closed since
	raw := false // in a script or a style: text that is not the page's
	for i := 0; ; i++ {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
		tt := z.Next()
		n := len(z.Raw())
		switch tt {
		case html.ErrorToken:
			return len(body), nil // the end (the tokenizer reads bytes: no other error)
		case html.StartTagToken, html.SelfClosingTagToken:
			if nodes += 1 + open; nodes > htmlMaxElements {
				return off, nil
			}
			name, _ := z.TagName()
			raw = tt == html.StartTagToken && (bytes.Equal(name, []byte("script")) || bytes.Equal(name, []byte("style")))
			if tt == html.StartTagToken && formatting[string(name)] {
				open++
			}
		case html.EndTagToken:
			raw = false
			if name, _ := z.TagName(); formatting[string(name)] && open > 0 {
				open--
			}
		case html.TextToken:
			if nodes += open; nodes > htmlMaxElements {
				return off, nil
			}
			if !raw {
				if text += n; text > htmlMaxText {
					// The text that fits, to a character's start.
					end := off + n - (text - htmlMaxText)
					for end > off && !utf8.RuneStart(body[end]) {
						end--
					}
					return end, nil
				}
			}
		}
		off += n
	}
}

// formatting are the elements the HTML parser reopens after a block that
// closed them (the spec's formatting elements).
var formatting = map[string]bool{"a": true, "b": true, "big": true, "code": true, "em": true, "font": true, "i": true,
	"nobr": true, "s": true, "small": true, "strike": true, "strong": true, "tt": true, "u": true}

// flatten makes every element of doc deeper than maxDepth give its text
// to its ancestor at maxDepth (in document order, a line apart), and go.
func flatten(doc *html.Node, maxDepth int) {
	type at struct {
		n     *html.Node
		depth int
	}
	stack := []at{{doc, 0}}
	for len(stack) > 0 {
		top := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for c := top.n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			if top.depth+1 >= maxDepth {
				hoistText(c)
				continue
			}
			stack = append(stack, at{c, top.depth + 1})
		}
	}
}

// hoistText replaces n's children by one text node: the text of all its
// descendants, in order, a line apart where one element's text ends.
func hoistText(n *html.Node) {
	if n.FirstChild == nil || (n.FirstChild == n.LastChild && n.FirstChild.Type == html.TextNode) {
		return
	}
	var b strings.Builder
	var walk []*html.Node // what is left to visit, the next on top
	for c := n.LastChild; c != nil; c = c.PrevSibling {
		walk = append(walk, c)
	}
	for len(walk) > 0 {
		c := walk[len(walk)-1]
		walk = walk[:len(walk)-1]
		switch c.Type {
		case html.TextNode:
			b.WriteString(c.Data)
		case html.ElementNode:
			if c.Data == "script" || c.Data == "style" {
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			for cc := c.LastChild; cc != nil; cc = cc.PrevSibling {
				walk = append(walk, cc)
			}
		}
	}
	for n.FirstChild != nil {
		n.RemoveChild(n.FirstChild)
	}
	n.AppendChild(&html.Node{Type: html.TextNode, Data: b.String()})
}
