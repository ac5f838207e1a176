package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apprun/apprun/llm/llmtest"
)

func withSourcesAllowPrivate() option { return func(c *Config) { c.SourcesAllowPrivate = true } }

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

	h := start(t, withLimits(noLimits), withModel(fake), withSourcesAllowPrivate())
	a := h.account(100)
	run := func(url string) map[string]any {
		t.Helper()
		runNo := h.create(a, map[string]any{"app_slug": "competitor-pricing-summary", "input": map[string]any{"pricing_url": url}})
		return h.waitRun(a, runNo)
	}
	done := run(web.URL + "/pricing")
	if done["status"] != "completed" || !strings.Contains(done["summary"].(string), "Rival: 2 plans") {
		t.Fatalf("a readable page: %v", done)
	}
	if user := fake.Received()[0].User(); !strings.Contains(user, "Team costs $99 a month") || strings.Contains(user, "<footer>") {
		t.Fatalf("the model was not given the page's main text:\n%s", user)
	}
	gone := run(web.URL + "/gone")
	if gone["status"] != "failed" || errCode(gone) != "source_unavailable" || gone["refunded_credits"] != float64(15) ||
		!strings.Contains(gone["error"].(map[string]any)["message"].(string), "answered 404") {
		t.Fatalf("a page that is gone: %v", gone)
	}
	if bal, _ := h.balance(a); bal != 85 {
		t.Fatalf("balance %d, want 85: one charge kept, one refunded", bal)
	}

	// Without the test option, loopback is refused by the outbound check.
	strict := start(t, withLimits(noLimits), withModel(fake))
	b := strict.account(100)
	runNo := strict.create(b, map[string]any{"app_slug": "competitor-pricing-summary", "input": map[string]any{"pricing_url": web.URL + "/pricing"}})
	refused := strict.waitRun(b, runNo)
	if refused["status"] != "failed" || errCode(refused) != "source_unavailable" ||
		!strings.Contains(refused["error"].(map[string]any)["message"].(string), "address not allowed") {
		t.Fatalf("a loopback source without the option: %v", refused)
	}
	if bal, _ := strict.balance(b); bal != 100 {
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
