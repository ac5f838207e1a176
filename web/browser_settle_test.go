package web_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"

	"github.com/chromedp/chromedp"
)

// TestTheBrowserCheckWaitsForTheStylesheet: a page the site's own script
// opens (its reload when a run ends, a form's answer) is not awaited by
// chromedp the way a Navigate is, so the page is visible before its
// stylesheet is in. The browser test once measured the finished run's
// page then, under load: its code blocks, unstyled, scrolled the page
// sideways. check now waits for the page's load (settled); here the
// stylesheet comes 1.5 s late, and an App's page, whose curl block
// scrolls the page sideways unstyled, is checked after a reload.
func TestTheBrowserCheckWaitsForTheStylesheet(t *testing.T) {
	t.Parallel()
	d := phoneBehind(t, func(w http.ResponseWriter, r *http.Request, node http.Handler) {
		if strings.HasPrefix(r.URL.Path, "/static/") {
			time.Sleep(1500 * time.Millisecond)
		}
		node.ServeHTTP(w, r)
	})
	d.do("open", chromedp.Navigate(d.base+"/apps/cold-email-writer"), chromedp.WaitVisible(chromedp.CSS("main")))
	if !eval[bool](d, styledJS) {
		t.Fatal("the stylesheet is not in after a Navigate")
	}
	d.do("reload by the page's script", chromedp.Evaluate[chromedp.Void](`setTimeout(() => location.reload(), 0); true`))
	for deadline := time.Now().Add(20 * time.Second); ; {
		// Evaluated in whichever document is there: an error is the
		// navigation in between.
		kind, err := chromedp.Run(d.ctx, chromedp.Evaluate[string](`performance.getEntriesByType("navigation")[0].type`))
		if err == nil && kind == "reload" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page did not reload: %q %v", kind, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	d.do("wait for the reloaded page", chromedp.WaitVisible(chromedp.CSS("main")))
	d.check("reloaded") // as the website test checks every page
	if !eval[bool](d, styledJS) {
		t.Fatal("checked before the stylesheet was in")
	}
}

// TestTheBrowserCheckAsksAgainForAStylesheetThatFailed: a page whose
// stylesheet requests failed loads complete and unstyled; check asks for
// the stylesheet once more (5 s after the load) rather than measuring the
// page unstyled or reloading it, and the page is checked styled. Every
// stylesheet request before the check fails (however many the browser
// makes), and only the check's own request is served.
func TestTheBrowserCheckAsksAgainForAStylesheetThatFailed(t *testing.T) {
	t.Parallel()
	var checking atomic.Bool
	var failed, served atomic.Int32
	d := phoneBehind(t, func(w http.ResponseWriter, r *http.Request, node http.Handler) {
		if r.URL.Path == "/static/style.css" {
			if !checking.Load() {
				failed.Add(1)
				http.Error(w, "the stylesheet fails until the check", http.StatusServiceUnavailable)
				return
			}
			served.Add(1)
		}
		node.ServeHTTP(w, r)
	})
	d.do("open", chromedp.Navigate(d.base+"/apps/cold-email-writer"), chromedp.WaitVisible(chromedp.CSS("main")))
	if eval[bool](d, styledJS) || failed.Load() == 0 {
		t.Fatalf("the page is styled, or its stylesheet was never refused (%d): the test proves nothing", failed.Load())
	}
	checking.Store(true)
	d.check("stylesheet-asked-again")
	if !eval[bool](d, styledJS) || served.Load() == 0 {
		t.Fatalf("checked unstyled, or the check never asked for the stylesheet again (%d)", served.Load())
	}
}

// phoneBehind is a phone-sized browser on a node seen through front, a
// server that hands each request to the node as it chooses (later, or
// not at all).
func phoneBehind(t *testing.T, front func(w http.ResponseWriter, r *http.Request, node http.Handler)) *webDriver {
	t.Helper()
	bin := ChromiumOrSkip(t)
	node := Start(t).Srv.Config.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { front(w, r, node) }))
	t.Cleanup(srv.Close)
	ctx := StartChromium(t, bin, 390, 844, 60*time.Second)
	return &webDriver{t: t, ctx: ctx, base: srv.URL, shots: t.TempDir(), size: "phone", w: 390, h: 844}
}
