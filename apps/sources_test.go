package apps

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/outbound"
)

const articleHTML = `<!doctype html><html><head><title>Pricing · Rival</title></head><body>
<nav><a href="/">Home</a><a href="/blog">Blog</a></nav>
<article><h1>Pricing</h1>
<p>Starter costs $29 a month for one user and includes invoicing, receipts and bank sync for small teams.</p>
<p>Team costs $99 a month for five users, with approvals, roles and a priority support line that answers within a day.</p>
<p>Enterprise is priced on request and adds single sign-on, audit logs and a named account manager for larger firms.</p>
</article><footer>© Rival Inc. Terms. Privacy.</footer></body></html>`

const rssXML = `<?xml version="1.0"?><rss version="2.0"><channel><title>Acme blog</title><link>https://acme.test/</link>
<item><title>We cut month-end to a day</title><link>https://acme.test/a</link><pubDate>Mon, 02 Nov 2026 10:00:00 GMT</pubDate>
<description>&lt;p&gt;How &lt;b&gt;automatic matching&lt;/b&gt; saved a week.&lt;/p&gt;</description></item>
<item><title>Autopilot is live</title><link>https://acme.test/b</link><description>Receipts matched nightly.</description></item>
</channel></rss>`

// sourceServer serves each source a test reads, and the ways one fails.
func sourceServer(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/pricing", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(articleHTML)) })
	mux.HandleFunc("/sitemap.xml", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>http://` + r.Host + `/pages.xml</loc></sitemap></sitemapindex>`))
	})
	mux.HandleFunc("/pages.xml", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>https://acme.test/</loc><lastmod>2026-11-01</lastmod></url><url><loc>https://acme.test/pricing</loc></url></urlset>`))
	})
	mux.HandleFunc("/feed", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(rssXML)) })
	mux.HandleFunc("/feed.xml", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(rssXML)) })
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(articleHTML)) })
	mux.HandleFunc("/CHANGELOG.md", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("# Changelog\n\n## 2.4.0\n- Nightly receipt matching\n- Faster bank sync\n"))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(strings.Repeat("x", 5000))) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/gone", http.NotFound)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func runTool(t *testing.T, env *Env, name, url string) (any, error) {
	t.Helper()
	job := engine.Job{Input: map[string]any{"source_url": url}}
	return tools[name].run(context.Background(), env.withDefaults(), job, "source_url", func(engine.Step) {})
}

func TestEachSourceToolReadsItsSource(t *testing.T) {
	t.Parallel()
	srv := sourceServer(t)
	env := &Env{HTTPClient: outbound.FetchClient(true, 10*time.Second)} // loopback: allowed by this explicit test option
	out, err := runTool(t, env, "web_page", srv.URL+"/pricing")
	if p, _ := out.(Page); err != nil || !strings.Contains(p.Text, "Team costs $99") || strings.Contains(p.Text, "Privacy") || p.Title == "" {
		t.Fatalf("web_page: %v %+v", err, out)
	}
	out, err = runTool(t, env, "sitemap", srv.URL)
	if s, _ := out.(Sitemap); err != nil || len(s.Pages) != 2 || s.Pages[0].LastMod != "2026-11-01" {
		t.Fatalf("sitemap: %v %+v", err, out)
	}
	out, err = runTool(t, env, "feed", srv.URL+"/feed")
	if f, _ := out.(Feed); err != nil || f.Title != "Acme blog" || len(f.Items) != 2 || f.Items[0].Published != "2026-11-02" ||
		strings.Contains(f.Items[0].Summary, "<b>") || !strings.Contains(f.Items[0].Summary, "automatic matching") {
		t.Fatalf("feed: %v %+v", err, out)
	}
	out, err = runTool(t, env, "changelog", srv.URL+"/CHANGELOG.md")
	if c, _ := out.(Changelog); err != nil || !strings.Contains(c.Text, "## 2.4.0") {
		t.Fatalf("changelog: %v %+v", err, out)
	}
}

// A source that is down, too big, too slow, redirecting for ever, not
// what it should be, or on a refused address fails the run with
// source_unavailable, naming why.
func TestASourceThatFailsSaysWhy(t *testing.T) {
	t.Parallel()
	srv := sourceServer(t)
	// Only the slow source has the short time limit: six redirects on a
	// loaded machine (three test packages and a CPU hog) took longer than
	// 300 ms, and the loop was then refused as slow, not as a loop.
	env := &Env{HTTPClient: outbound.FetchClient(true, 10*time.Second), SourceMaxBytes: 4096, SourceTimeout: 10 * time.Second}
	slow := *env
	slow.SourceTimeout = 300 * time.Millisecond
	for _, c := range []struct {
		env              *Env
		tool, path, want string
	}{
		{env, "web_page", "/gone", "answered 404"},
		{env, "web_page", "/big", "larger than 4 KiB"},
		{&slow, "web_page", "/slow", "took longer than 300ms"},
		{env, "web_page", "/loop", "redirected more than 5 times"},
		{env, "feed", "/pricing", "is not an RSS or Atom feed"},
		{env, "sitemap", "/pricing", "is not a sitemap"},
	} {
		_, err := runTool(t, c.env, c.tool, srv.URL+c.path)
		var re *engine.RunError
		if !errors.As(err, &re) || re.Code != engine.FailSourceUnavailable || !strings.Contains(re.Message, c.want) {
			t.Errorf("%s %s: %v, want source_unavailable naming %q", c.tool, c.path, err, c.want)
		}
	}
	// Without the test option, loopback is a refused address.
	_, err := runTool(t, &Env{HTTPClient: outbound.FetchClient(false, 10*time.Second)}, "web_page", srv.URL+"/pricing")
	var re *engine.RunError
	if !errors.As(err, &re) || re.Code != engine.FailSourceUnavailable || !strings.Contains(re.Message, "address not allowed") {
		t.Errorf("loopback without the option: %v", err)
	}
	if _, err := runTool(t, env, "web_page", "file:///etc/passwd"); err == nil || !strings.Contains(err.Error(), "not a web address") {
		t.Errorf("a file URL: %v", err)
	}
}

// exampleWeb is a client on which https://example.com (the shipped Apps'
// example sources) is sourceServer: the web the examples read, faked at
// the edge with real HTTP. Other hosts (the fake GitHub) pass through.
func exampleWeb(t *testing.T) *http.Client {
	srv := sourceServer(t)
	target, _ := url.Parse(srv.URL)
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Host == "example.com" {
			r = r.Clone(r.Context())
			r.URL.Scheme, r.URL.Host = target.Scheme, target.Host
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
