package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
	bin := chromium()
	if bin == "" {
		t.Skip("no Chromium installed: `apt-get install chromium` (.ci/run installs it) to run the browser test")
	}
	h := start(t)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/static/") {
			time.Sleep(1500 * time.Millisecond)
		}
		h.srv.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(slow.Close)
	ctx := startChromium(t, bin, 390, 844, 60*time.Second)
	d := &webDriver{t: t, ctx: ctx, base: slow.URL, shots: t.TempDir(), size: "phone", w: 390, h: 844}
	d.do("open", chromedp.Navigate(d.base+"/apps/cold-email-writer"), chromedp.WaitVisible(chromedp.CSS("main")))
	styled := styledJS
	if !eval[bool](d, styled) {
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
	if !eval[bool](d, styled) {
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
	bin := chromium()
	if bin == "" {
		t.Skip("no Chromium installed: `apt-get install chromium` (.ci/run installs it) to run the browser test")
	}
	h := start(t)
	var checking atomic.Bool
	var failed, served atomic.Int32
	flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/static/style.css" {
			if !checking.Load() {
				failed.Add(1)
				http.Error(w, "the stylesheet fails until the check", http.StatusServiceUnavailable)
				return
			}
			served.Add(1)
		}
		h.srv.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(flaky.Close)
	ctx := startChromium(t, bin, 390, 844, 60*time.Second)
	d := &webDriver{t: t, ctx: ctx, base: flaky.URL, shots: t.TempDir(), size: "phone", w: 390, h: 844}
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
