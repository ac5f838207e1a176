package apps_test

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"

	"github.com/apprun/apprun/apps"
	"github.com/apprun/apprun/node"

	"github.com/apprun/apprun/llm/llmtest"
)

const pricingPage = `<!doctype html><html><head><title>Pricing · Rival</title></head><body><nav>Home Blog</nav>
<article><h1>Pricing</h1><p>Starter costs $29 a month for one user and includes invoicing, receipts and bank sync for small teams.</p>
<p>Team costs $99 a month for five users, with approvals, roles and a priority support line that answers within a day.</p></article>
<footer>Terms</footer></body></html>`

const pricingSummary = `{"competitor":"Rival","plans":[{"name":"Starter","price":"$29 a month","includes":["Invoicing"],"limits":["1 user"]},` +
	`{"name":"Team","price":"$99 a month","includes":["Approvals"],"limits":["5 users"]}],"pricing_model":"Flat per plan.",` +
	`"strengths":["Cheap entry"],"weaknesses":["Steep jump"],"positioning":"Lead with price per seat."}`

// A source-reading App through the real node: it reads its page (served
// here) and completes; a source that is down, or on an address the
// outbound check refuses, fails the run with source_unavailable and
// refunds it.
func TestASourceReadingAppReadsItsSourceOrFailsWithARefund(t *testing.T) {
	t.Parallel()
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/pricing" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(pricingPage))
	}))
	defer web.Close()
	fake := llmtest.New()
	defer fake.Close()
	fake.Script(llmtest.Reply{Text: pricingSummary})

	h := Start(t, WithLimits(NoLimits), WithModel(fake), WithSourcesAllowPrivate())
	a := h.Account(100)
	run := func(url string) map[string]any {
		t.Helper()
		runNo := h.Create(a, map[string]any{"app_slug": "competitor-pricing-summary", "input": map[string]any{"pricing_url": url}})
		return h.WaitRun(a, runNo)
	}
	done := run(web.URL + "/pricing")
	if done["status"] != "completed" || !strings.Contains(done["summary"].(string), "Rival: 2 plans") {
		t.Fatalf("a readable page: %v", done)
	}
	if user := fake.Received()[0].User(); !strings.Contains(user, "Team costs $99 a month") || strings.Contains(user, "<footer>") {
		t.Fatalf("the model was not given the page's main text:\n%s", user)
	}
	gone := run(web.URL + "/gone")
	if gone["status"] != "failed" || ErrCode(gone) != "source_unavailable" || gone["refunded_credits"] != float64(15) ||
		!strings.Contains(gone["error"].(map[string]any)["message"].(string), "answered 404") {
		t.Fatalf("a page that is gone: %v", gone)
	}
	if bal, _ := h.Balance(a); bal != 85 {
		t.Fatalf("balance %d, want 85: one charge kept, one refunded", bal)
	}

	// Without the test option, loopback is refused by the outbound check.
	strict := Start(t, WithLimits(NoLimits), WithModel(fake))
	b := strict.Account(100)
	runNo := strict.Create(b, map[string]any{"app_slug": "competitor-pricing-summary", "input": map[string]any{"pricing_url": web.URL + "/pricing"}})
	refused := strict.WaitRun(b, runNo)
	if refused["status"] != "failed" || ErrCode(refused) != "source_unavailable" ||
		!strings.Contains(refused["error"].(map[string]any)["message"].(string), "address not allowed") {
		t.Fatalf("a loopback source without the option: %v", refused)
	}
	if bal, _ := strict.Balance(b); bal != 100 {
		t.Fatalf("balance %d after a refused source, want 100", bal)
	}
}

// exampleSources serves what the shipped Apps' examples read at
// https://example.com: a page, a pricing page, a sitemap, a feed and a
// changelog.
func exampleSources(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	page := func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(pricingPage)) }
	mux.HandleFunc("/{$}", page)
	mux.HandleFunc("/pricing", page)
	mux.HandleFunc("/sitemap.xml", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://example.com/</loc></url><url><loc>https://example.com/pricing</loc></url></urlset>`))
	})
	mux.HandleFunc("/feed.xml", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`<?xml version="1.0"?><rss version="2.0"><channel><title>Acme</title><item><title>Month-end in a day</title><link>https://example.com/a</link></item></channel></rss>`))
	})
	mux.HandleFunc("/CHANGELOG.md", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("# Changelog\n\n## 2.4.0\n- Nightly receipt matching\n"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// failingSources serves each way a source fails, for every tool: a page
// that is gone, one over the size bound, one slower than the time bound;
// and a fake GitHub API whose repositories acme/gone, acme/big and
// acme/slow fail the same ways.
func failingSources(t *testing.T) (web, github *httptest.Server) {
	fail := func(w http.ResponseWriter, r *http.Request) {
		switch path.Base(r.URL.Path) {
		case "big":
			w.Write([]byte(strings.Repeat("<p>big</p>", 1000))) // 10 KiB, over the 4 KiB bound below
		case "slow":
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		default:
			http.NotFound(w, r)
		}
	}
	web = httptest.NewServer(http.HandlerFunc(fail))
	github = httptest.NewServer(http.HandlerFunc(fail))
	t.Cleanup(web.Close)
	t.Cleanup(github.Close)
	return web, github
}

// sourceFields are the shipped Apps that read a source: the input field
// each reads, and whether it reads GitHub.
func sourceFields(t *testing.T) map[string]struct {
	field  string
	github bool
} {
	defs, err := apps.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]struct {
		field  string
		github bool
	}{}
	for _, d := range defs {
		for _, s := range d.Steps {
			if s.Input != "" {
				out[d.Slug] = struct {
					field  string
					github bool
				}{s.Input, s.Tool == "github_repo"}
			}
		}
	}
	return out
}

// Every App that reads a source, through the real node: a source that is
// down, too big, too slow, or (for a web address) on a refused address
// fails the run with source_unavailable, naming why, and refunds it.
func TestEveryToolUsingAppFailsWithARefundWhenItsSourceFails(t *testing.T) {
	t.Parallel()
	web, gh := failingSources(t)
	defs, _ := apps.Shipped()
	examples := map[string]map[string]any{}
	for _, d := range defs {
		examples[d.Slug] = d.Examples[0].Input
	}
	fake := llmtest.New()
	defer fake.Close()
	h := Start(t, WithLimits(NoLimits), WithModel(fake), WithSourcesAllowPrivate(), func(c *node.Config) {
		c.GitHubAPI, c.SourceMaxBytes, c.SourceTimeout = gh.URL, 4096, 300*time.Millisecond
	})
	// A node as shipped: sources on loopback are refused, whatever the
	// GitHub API base is.
	strict := Start(t, WithLimits(NoLimits), WithModel(fake), func(c *node.Config) { c.GitHubAPI = "https://api.github.com" })
	a, s := h.Account(10_000), strict.Account(10_000)
	sources := sourceFields(t)
	if len(sources) < 8 {
		t.Fatalf("%d Apps read a source, want at least 8", len(sources))
	}
	for slug, src := range sources {
		cases := []struct{ path, want string }{
			{"gone", "404"}, {"big", "larger than 4 KiB"}, {"slow", "took longer than 300ms"},
		}
		for _, c := range cases {
			input := maps.Clone(examples[slug])
			if src.github {
				input[src.field] = "https://github.com/acme/" + c.path
				c.want = map[string]string{"gone": "no public repository acme/gone"}[c.path] + map[string]string{"big": "larger than 4 KiB", "slow": "took longer than 300ms"}[c.path]
			} else {
				input[src.field] = web.URL + "/" + c.path
			}
			run := h.WaitRun(a, h.Create(a, map[string]any{"app_slug": slug, "input": input}))
			if run["status"] != "failed" || ErrCode(run) != "source_unavailable" || run["refunded_credits"] != run["credit_cost"] ||
				!strings.Contains(run["error"].(map[string]any)["message"].(string), c.want) {
				t.Errorf("%s with a %s source: %v, want source_unavailable naming %q, refunded", slug, c.path, run, c.want)
			}
		}
		if src.github {
			continue // the GitHub API's address is the operator's, never the user's
		}
		input := maps.Clone(examples[slug])
		input[src.field] = web.URL + "/gone"
		run := strict.WaitRun(s, strict.Create(s, map[string]any{"app_slug": slug, "input": input}))
		if run["status"] != "failed" || ErrCode(run) != "source_unavailable" || run["refunded_credits"] != run["credit_cost"] ||
			!strings.Contains(run["error"].(map[string]any)["message"].(string), "address not allowed") {
			t.Errorf("%s with a source on loopback: %v, want source_unavailable, address not allowed, refunded", slug, run)
		}
	}
	for _, x := range []struct {
		h *Harness
		a Account
	}{{h, a}, {strict, s}} {
		if bal, active := x.h.Balance(x.a); bal != 10_000 || active != 0 {
			t.Errorf("balance %d, %d active: every failed run should be refunded", bal, active)
		}
	}
	if n := len(fake.Received()); n != 0 {
		t.Errorf("the model was asked %d times for runs whose source failed", n)
	}
}
