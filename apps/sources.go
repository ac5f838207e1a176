package apps

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"codeberg.org/readeck/go-readability/v2"
	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/outbound"
	"github.com/mmcdole/gofeed"
)

// The bounds of one fetch of a source: its size, its time, and (in the
// client, outbound.FetchClient) 5 redirects, each dialled through the
// address check. A source past a bound fails the run with
// source_unavailable, naming the bound.
const (
	sourceMaxBytes = 2 << 20
	sourceTimeout  = 15 * time.Second
	// sourceTextLimit is how much of a source's text a model is given.
	sourceTextLimit = 12000
)

// fetchSource GETs one http(s) source and records the read; in a replay
// it serves the recorded read, with no network.
func fetchSource(ctx context.Context, env *Env, raw, what, accept string) ([]byte, *url.URL, error) {
	sess := sessionOf(ctx)
	if sess.replaying() {
		return replaySource(sess, raw)
	}
	started := time.Now().UTC()
	f, err := fetchLive(ctx, env, raw, what, accept)
	sess.record(sourceEntry(raw, started, f.status, f.ctype, f.body, f.final, err))
	if err != nil {
		return nil, nil, err
	}
	return f.body, f.final, nil
}

// replaySource is the recorded read of raw (recorded again, as this
// replay's).
func replaySource(sess *session, raw string) ([]byte, *url.URL, error) {
	rec, err := sess.next(engine.RecordSource)
	if err != nil {
		return nil, nil, err
	}
	e := *rec
	e.URL = redacted(raw)
	sess.record(e)
	if e.URL != rec.URL {
		return nil, nil, fmt.Errorf("%w: the replay reads %s where the run read %s", engine.ErrNotRecorded, raw, rec.URL)
	}
	if rec.Error != nil {
		return nil, nil, replayError(rec.Error)
	}
	body, err := recordedBody(rec)
	if err != nil {
		return nil, nil, err
	}
	final, err := url.Parse(rec.FinalURL)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: recorded final URL %q", engine.ErrNotRecorded, rec.FinalURL)
	}
	return body, final, nil
}

// fetched is one source read as it went: what the record keeps.
type fetched struct {
	body   []byte
	final  *url.URL
	status int
	ctype  string
}

func fetchLive(ctx context.Context, env *Env, raw, what, accept string) (fetched, error) {
	var f fetched
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return f, unavailable("%q is not a web address (https://…)", raw)
	}
	ctx, cancel := context.WithTimeout(ctx, env.SourceTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return f, unavailable("%q is not a web address", raw)
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", "apprun (+https://github.com/apprun/apprun)")
	resp, err := env.HTTPClient.Do(req)
	if err != nil {
		switch why := outbound.Describe(err); {
		case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
			return f, unavailable("the %s at %s took longer than %s", what, u.Host, env.SourceTimeout)
		case strings.Contains(err.Error(), "too many redirects"):
			return f, unavailable("the %s at %s redirected more than 5 times", what, u.Host)
		default:
			return f, unavailable("the %s at %s could not be fetched: %s", what, u.Host, why)
		}
	}
	defer resp.Body.Close()
	f.status, f.ctype, f.final = resp.StatusCode, resp.Header.Get("Content-Type"), resp.Request.URL
	if resp.StatusCode != http.StatusOK {
		return f, unavailable("the %s at %s answered %d", what, u.Host, resp.StatusCode)
	}
	if resp.ContentLength > env.SourceMaxBytes {
		return f, unavailable("the %s at %s is larger than %d KiB", what, u.Host, env.SourceMaxBytes>>10)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, env.SourceMaxBytes+1))
	switch {
	case ctx.Err() != nil:
		return f, unavailable("the %s at %s took longer than %s", what, u.Host, env.SourceTimeout)
	case err != nil:
		return f, unavailable("the %s at %s could not be read: %s", what, u.Host, outbound.Describe(err))
	case int64(len(body)) > env.SourceMaxBytes:
		return f, unavailable("the %s at %s is larger than %d KiB", what, u.Host, env.SourceMaxBytes>>10)
	}
	f.body = body
	return f, nil
}

// cut keeps the first n characters of s.
func cut(s string, n int) (string, bool) {
	r := []rune(strings.TrimSpace(s))
	if len(r) <= n {
		return string(r), false
	}
	return string(r[:n]), true
}

// Page is what the web_page tool reads: a page's main text, extracted by
// readability (codeberg.org/readeck/go-readability, a maintained port of
// Mozilla's), not by patterns.
type Page struct {
	URL       string `json:"url"`
	Title     string `json:"title"`
	SiteName  string `json:"site_name,omitempty"`
	Excerpt   string `json:"excerpt,omitempty"`
	Text      string `json:"text"`
	Truncated bool   `json:"text_truncated,omitempty"`
}

func readPage(ctx context.Context, env *Env, job engine.Job, field string, progress func(engine.Step)) (any, error) {
	raw, _ := job.Input[field].(string)
	progress(engine.Step{Index: 1, Total: 1, Tool: "web_page", Message: "Reading " + hostOf(raw)})
	body, final, err := fetchSource(ctx, env, raw, "page", "text/html,application/xhtml+xml")
	if err != nil {
		return nil, err
	}
	return pageOf(ctx, env, body, final)
}

// pageOf is a page's main text, read in one of env's parse slots within
// the bounds of htmldoc.go.
func pageOf(ctx context.Context, env *Env, body []byte, final *url.URL) (Page, error) {
	return bounded(ctx, env, func(ctx context.Context) (Page, error) {
		doc, err := boundedDocument(ctx, body)
		if err != nil {
			return Page{}, unavailable("the page at %s has no readable text", final.Host)
		}
		p := readability.NewParser()
		art, err := p.ParseAndMutate(doc, final)
		if err != nil || art.Node == nil {
			return Page{}, unavailable("the page at %s has no readable text", final.Host)
		}
		var text strings.Builder
		if err := art.RenderText(&text); err != nil {
			return Page{}, unavailable("the page at %s has no readable text", final.Host)
		}
		out := Page{URL: final.String(), Title: art.Title(), SiteName: art.SiteName(), Excerpt: art.Excerpt()}
		out.Text, out.Truncated = cut(text.String(), sourceTextLimit)
		if out.Text == "" {
			return Page{}, unavailable("the page at %s has no readable text", final.Host)
		}
		return out, nil
	})
}

func hostOf(raw string) string {
	if u, err := url.Parse(strings.TrimSpace(raw)); err == nil && u.Host != "" {
		return u.Host
	}
	return "the page"
}

// Sitemap is what the sitemap tool reads: a site's pages from its
// sitemap (a sitemap index is followed one level, up to 5 sitemaps).
type Sitemap struct {
	URL   string        `json:"url"`
	Pages []SitemapPage `json:"pages"`
	// More is set when the sitemap lists more pages than are given.
	More bool `json:"more,omitempty"`
}

// SitemapPage is one page a sitemap lists.
type SitemapPage struct {
	Loc     string `json:"loc"`
	LastMod string `json:"lastmod,omitempty"`
}

const sitemapPages = 300

type sitemapXML struct {
	XMLName  xml.Name `xml:""`
	URLs     []SitemapPage
	Sitemaps []string
}

func (s *sitemapXML) UnmarshalXML(d *xml.Decoder, start xml.StartElement) error {
	var doc struct {
		URL []struct {
			Loc     string `xml:"loc"`
			LastMod string `xml:"lastmod"`
		} `xml:"url"`
		Sitemap []struct {
			Loc string `xml:"loc"`
		} `xml:"sitemap"`
	}
	if err := d.DecodeElement(&doc, &start); err != nil {
		return err
	}
	s.XMLName = start.Name
	for _, u := range doc.URL {
		s.URLs = append(s.URLs, SitemapPage{Loc: strings.TrimSpace(u.Loc), LastMod: strings.TrimSpace(u.LastMod)})
	}
	for _, m := range doc.Sitemap {
		s.Sitemaps = append(s.Sitemaps, strings.TrimSpace(m.Loc))
	}
	return nil
}

func readSitemap(ctx context.Context, env *Env, job engine.Job, field string, progress func(engine.Step)) (any, error) {
	raw, _ := job.Input[field].(string)
	u, err := url.Parse(strings.TrimSpace(raw))
	if err == nil && (u.Path == "" || u.Path == "/") {
		u.Path = "/sitemap.xml" // a site's address: its sitemap is at the usual place
		raw = u.String()
	}
	progress(engine.Step{Index: 1, Total: 1, Tool: "sitemap", Message: "Reading the sitemap of " + hostOf(raw)})
	out := Sitemap{URL: raw, Pages: []SitemapPage{}}
	queue, fetched := []string{raw}, 0
	for len(queue) > 0 && fetched < 5 {
		next := queue[0]
		queue = queue[1:]
		body, _, err := fetchSource(ctx, env, next, "sitemap", "application/xml,text/xml")
		if err != nil {
			if fetched == 0 {
				return nil, err
			}
			continue // a child sitemap: the others still count
		}
		fetched++
		doc, err := bounded(ctx, env, func(ctx context.Context) (doc sitemapXML, err error) {
			// encoding/xml is linear in the bytes; ctxReader stops it on a cancel.
			return doc, xml.NewDecoder(&ctxReader{ctx: ctx, r: bytes.NewReader(body)}).Decode(&doc)
		})
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil || (doc.XMLName.Local != "urlset" && doc.XMLName.Local != "sitemapindex") {
			if fetched == 1 {
				return nil, unavailable("%s is not a sitemap (urlset or sitemapindex)", next)
			}
			continue
		}
		queue = append(queue, doc.Sitemaps...)
		for _, p := range doc.URLs {
			if len(out.Pages) == sitemapPages {
				out.More = true
				break
			}
			if p.Loc != "" {
				out.Pages = append(out.Pages, p)
			}
		}
	}
	if len(out.Pages) == 0 {
		return nil, unavailable("the sitemap at %s lists no pages", hostOf(raw))
	}
	return out, nil
}

// Feed is what the feed tool reads: an RSS or Atom feed's newest items,
// parsed by gofeed (github.com/mmcdole/gofeed).
type Feed struct {
	Title string     `json:"title"`
	URL   string     `json:"url"`
	Items []FeedItem `json:"items"`
}

// FeedItem is one entry of a feed.
type FeedItem struct {
	Title     string `json:"title"`
	Link      string `json:"link,omitempty"`
	Published string `json:"published,omitempty"`
	Summary   string `json:"summary,omitempty"`
}

const feedItems = 20

func readFeed(ctx context.Context, env *Env, job engine.Job, field string, progress func(engine.Step)) (any, error) {
	raw, _ := job.Input[field].(string)
	progress(engine.Step{Index: 1, Total: 1, Tool: "feed", Message: "Reading the feed of " + hostOf(raw)})
	body, final, err := fetchSource(ctx, env, raw, "feed", "application/rss+xml,application/atom+xml,application/xml,text/xml")
	if err != nil {
		return nil, err
	}
	// gofeed reads RSS and Atom incrementally (ctxReader stops it on a
	// cancel); the items' summaries are HTML, read within htmldoc.go's
	// bounds.
	out, err := bounded(ctx, env, func(ctx context.Context) (Feed, error) {
		f, err := gofeed.NewParser().Parse(&ctxReader{ctx: ctx, r: bytes.NewReader(body)})
		if err != nil {
			return Feed{}, unavailable("%s is not an RSS or Atom feed", final.Host)
		}
		out := Feed{Title: f.Title, URL: final.String(), Items: []FeedItem{}}
		for _, it := range f.Items {
			if len(out.Items) == feedItems {
				break
			}
			item := FeedItem{Title: it.Title, Link: it.Link}
			if it.PublishedParsed != nil {
				item.Published = it.PublishedParsed.UTC().Format(time.DateOnly)
			}
			summary := it.Description
			if summary == "" {
				summary = it.Content
			}
			text, err := textOf(ctx, summary)
			if err != nil {
				return Feed{}, err
			}
			item.Summary, _ = cut(text, 600)
			out.Items = append(out.Items, item)
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	if len(out.Items) == 0 {
		return nil, unavailable("the feed at %s has no items", final.Host)
	}
	return out, nil
}

// summaryMaxBytes is how much of a feed item's summary is read: its text
// is cut to 600 characters.
const summaryMaxBytes = 64 << 10

// textOf is the text of an HTML fragment (a feed item's summary), read
// within htmldoc.go's bounds; an error only when ctx ended.
func textOf(ctx context.Context, fragment string) (string, error) {
	if !strings.Contains(fragment, "<") {
		return fragment, nil
	}
	page := "<html><body><article>" + fragment[:min(len(fragment), summaryMaxBytes)] + "</article></body></html>"
	doc, err := boundedDocument(ctx, []byte(page))
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return fragment, nil
	}
	p := readability.NewParser()
	art, err := p.ParseAndMutate(doc, &url.URL{Scheme: "https", Host: "feed"})
	if err != nil || art.Node == nil {
		return fragment, nil
	}
	var b strings.Builder
	if art.RenderText(&b) != nil {
		return fragment, nil
	}
	return b.String(), nil
}

// Changelog is what the changelog tool reads: a public changelog, as
// plain text or Markdown (a CHANGELOG.md), or a web page's main text.
type Changelog struct {
	URL       string `json:"url"`
	Text      string `json:"text"`
	Truncated bool   `json:"text_truncated,omitempty"`
}

func readChangelog(ctx context.Context, env *Env, job engine.Job, field string, progress func(engine.Step)) (any, error) {
	raw, _ := job.Input[field].(string)
	progress(engine.Step{Index: 1, Total: 1, Tool: "changelog", Message: "Reading the changelog at " + hostOf(raw)})
	body, final, err := fetchSource(ctx, env, raw, "changelog", "text/markdown,text/plain,text/html")
	if err != nil {
		return nil, err
	}
	text := string(body)
	if looksHTML(text) {
		page, err := pageOf(ctx, env, body, final)
		if err != nil {
			return nil, err
		}
		text = page.Text
	}
	out := Changelog{URL: final.String()}
	out.Text, out.Truncated = cut(text, sourceTextLimit)
	if out.Text == "" {
		return nil, unavailable("the changelog at %s is empty", final.Host)
	}
	return out, nil
}

func looksHTML(s string) bool {
	head := strings.ToLower(strings.TrimSpace(s[:min(len(s), 512)]))
	return strings.HasPrefix(head, "<!doctype html") || strings.HasPrefix(head, "<html") || strings.Contains(head, "<body")
}
