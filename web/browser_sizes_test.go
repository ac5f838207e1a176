package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/internal/mailpit"
	. "github.com/apprun/apprun/node/nodetest"

	"github.com/apprun/apprun/llm/llmtest"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// shotsDir is where the browser tests write a screenshot of every page
// (the README names it): $APPRUN_BROWSER_SHOTS, or bin/screenshots.
func shotsDir(t *testing.T) string {
	dir := os.Getenv("APPRUN_BROWSER_SHOTS")
	if dir == "" {
		dir = filepath.Join("..", "bin", "screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(dir)
	return abs
}

// axeSource is axe-core, installed from npm by .ci/run (tools/clientcheck).
func axeSource(t *testing.T) string {
	b, err := os.ReadFile(filepath.Join("..", "tools", "clientcheck", "node_modules", "axe-core", "axe.min.js"))
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("axe-core is not installed (.ci/run runs npm ci in tools/clientcheck): %v", err)
		}
		t.Logf("axe-core not installed (cd tools/clientcheck && npm ci): the accessibility checks are skipped")
		return ""
	}
	return string(b)
}

// TestBrowserWebsiteAtDesktopAndPhone drives the website in headless
// Chromium at 1280×900 and at 390×844 (each page also at 320 px wide on
// the phone): no page scrolls sideways, axe-core finds no violation, a
// reload after key creation makes no key, a field error sits beside its
// field with the values kept, cancel from the run page shows the refund,
// and Run again fills the form in. Every page is screenshotted at both
// sizes (shotsDir).
func TestBrowserWebsiteAtDesktopAndPhone(t *testing.T) {
	t.Parallel() // a browser waits on pages much of its time: it runs beside the other parallel tests
	bin := ChromiumOrSkip(t)
	fake := llmtest.New()
	t.Cleanup(fake.Close) // after the sizes, which run side by side
	// Password reset mails go through a real SMTP catcher (CI installs
	// it; without it, here, the reset walk is left out).
	opts := []Option{WithLimits(NoLimits), WithSignupCredits(500), WithModel(fake), WithWebhooks(50 * time.Millisecond)}
	var mail *mailpit.Catcher
	if mailpit.Binary() != "" || os.Getenv("CI") != "" {
		mail = mailpit.Start(t)
		opts = append(opts, WithSMTP(mail.SMTPURL()))
	} else {
		t.Log("no mailpit: the password reset walk is left out")
	}
	h := Start(t, opts...)
	shots, axe := shotsDir(t), axeSource(t)
	t.Logf("screenshots: %s", shots)
	for _, size := range []struct {
		name   string
		w, h   int64
		widths []int64 // also checked for sideways scrolling
	}{{"desktop", 1280, 900, nil}, {"phone", 390, 844, []int64{320}}} {
		t.Run(size.name, func(t *testing.T) {
			t.Parallel() // each size has its own browser and account; the model's replies are all alike
			ctx := StartChromium(t, bin, size.w, size.h, 240*time.Second)
			w := &webDriver{t: t, ctx: ctx, fake: fake, base: h.Srv.URL, shots: shots, size: size.name, w: size.w, h: size.h, widths: size.widths, axe: axe,
				mail: mail}
			w.flow(h)
		})
	}
}

type webDriver struct {
	t           *testing.T
	fake        *llmtest.Server
	ctx         context.Context
	base, shots string
	size        string
	w, h        int64
	widths      []int64
	axe         string
	mail        *mailpit.Catcher // nil: no reset walk
	n           int
	visited     int // pages grepped for operator talk
}

func (d *webDriver) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	d.t.Helper()
	if err := chromedp.Do(d.ctx, steps...); err != nil {
		d.t.Fatalf("%s (%s): %v", what, d.size, err)
	}
}

func eval[T any](d *webDriver, expr string) T {
	d.t.Helper()
	v, err := chromedp.Run(d.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		d.t.Fatalf("evaluate %q (%s): %v", expr, d.size, err)
	}
	return v
}

// check looks at the page the browser is on: no sideways scroll at each
// width, no axe violation, and a screenshot.
func (d *webDriver) check(name string) {
	d.t.Helper()
	d.settled()
	for _, width := range append([]int64{d.w}, d.widths...) {
		if width != d.w {
			d.do("narrow", chromedp.EmulateViewport(width, d.h))
		}
		if over := eval[int](d, `document.documentElement.scrollWidth - window.innerWidth`); over > 0 {
			wide := eval[string](d, `[...document.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
				.slice(0, 5).map(e => e.tagName + (e.id ? "#" + e.id : "") + "." + e.className).join(", ")`)
			d.t.Errorf("%s at %d px scrolls sideways by %d px: %s; %s", name, width, over, wide, d.where())
		}
		if width != d.w {
			d.do("widen", chromedp.EmulateViewport(d.w, d.h))
		}
	}
	d.noOperatorTalk(name)
	d.n++
	// Light, then dark (the system setting): axe on each, a screenshot of each.
	for _, scheme := range []string{"light", "dark"} {
		d.do("colour scheme "+scheme, colourScheme(scheme))
		if got := eval[bool](d, `matchMedia("(prefers-color-scheme: dark)").matches`); got != (scheme == "dark") {
			d.t.Fatalf("the page did not take the %s scheme", scheme)
		}
		d.axeCheck(name, scheme)
		buf, err := d.screenshot()
		if err != nil {
			d.t.Fatalf("screenshot %s: %v", name, err)
		}
		file := fmt.Sprintf("%s-%02d-%s.png", d.size, d.n, name)
		if scheme == "dark" {
			file = fmt.Sprintf("%s-%02d-%s-dark.png", d.size, d.n, name)
		}
		if err := os.WriteFile(filepath.Join(d.shots, file), buf, 0o644); err != nil {
			d.t.Fatal(err)
		}
	}
	d.do("colour scheme back", colourScheme("light"))
}

// colourScheme sets the system's colour scheme the page sees.
func colourScheme(scheme string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
		return err
	})
}

// axeCheck runs axe-core on the page: no violation.
func (d *webDriver) axeCheck(name, scheme string) {
	d.t.Helper()
	if d.axe == "" {
		return
	}
	if !eval[bool](d, `typeof axe !== "undefined"`) {
		eval[bool](d, d.axe+";true")
	}
	raw, err := chromedp.Run(d.ctx, chromedp.Evaluate[string](`axe.run(document, {resultTypes: ["violations"]}).then(r =>
		JSON.stringify(r.violations.map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.map(n => n.target.join(" ")).slice(0, 3)}))))`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		d.t.Fatalf("axe on %s: %v", name, err)
	}
	var violations []map[string]any
	_ = json.Unmarshal([]byte(raw), &violations)
	if len(violations) > 0 {
		d.t.Errorf("axe on %s (%s, %s): %s", name, d.size, scheme, raw)
	}
}

// operatorTalk is what no page may show a customer: our commands and
// variables, and the texts of Go and JSON errors.
var operatorTalk = []string{"apprun admin", "APPRUN_", "invalid character", "cannot unmarshal", "unexpected end of JSON", "json:",
	"goroutine", "<nil>", "%!", "context deadline exceeded", "context canceled", "dial tcp", "connection refused", "map[", "runtime error"}

// noOperatorTalk greps the page's text and its attributes a person may
// read (titles, placeholders, alt and labels) for operatorTalk.
func (d *webDriver) noOperatorTalk(name string) {
	d.t.Helper()
	// A page that reloads itself (a run's page, when the run ends) may be
	// between documents: wait for the next one.
	for try := 0; !eval[bool](d, `document.body !== null`); try++ {
		if try == 3 {
			d.t.Fatalf("%s (%s) is not a page: %s", name, d.size, d.where())
		}
		d.settled()
	}
	text := eval[string](d, `document.body.innerText + "\n" + [...document.querySelectorAll("[title],[placeholder],[alt],[aria-label]")]
		.map(e => [e.title, e.placeholder, e.alt, e.getAttribute("aria-label")].filter(Boolean).join(" ")).join("\n")`)
	for _, bad := range operatorTalk {
		if i := strings.Index(text, bad); i >= 0 {
			d.t.Errorf("%s (%s) shows %q: …%s…; %s", name, d.size, bad, text[max(0, i-80):min(len(text), i+80)], d.where())
		}
	}
	d.visited++
}

// screenshot takes a full-page screenshot within 30 s, trying once more
// after setting the viewport again: on a loaded CI machine a capture
// once waited for a frame until the test's deadline.
func (d *webDriver) screenshot() ([]byte, error) {
	var err error
	for attempt := range 2 {
		if attempt > 0 {
			d.do("viewport again", chromedp.EmulateViewport(d.w, d.h))
		}
		ctx, cancel := context.WithTimeout(d.ctx, 30*time.Second)
		var buf []byte
		buf, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
		cancel()
		if err == nil {
			return buf, nil
		}
		d.t.Logf("screenshot attempt %d: %v", attempt+1, err)
	}
	return nil, err
}

func (d *webDriver) visit(name, path string) {
	d.t.Helper()
	d.do("open "+path, chromedp.Navigate(d.base+path), chromedp.WaitVisible(chromedp.CSS("main")))
	d.check(name)
}

func (d *webDriver) flow(h *Harness) {
	t, css := d.t, func(s string) chromedp.CSS { return chromedp.CSS(s) }
	// Signed out.
	d.visit("home", "/")
	d.visit("signin", "/signin")
	d.visit("signup", "/signup")
	d.visit("not-found", "/no-such-page")
	// The curl block paints no background per line (it hid underscores)
	// and breaks no token.
	d.visit("app-signed-out", "/apps/cold-email-writer")
	if bg, ws := eval[string](d, `getComputedStyle(document.querySelector("#curl")).backgroundColor`),
		eval[string](d, `getComputedStyle(document.querySelector("#curl").parentElement).whiteSpace`); bg != "rgba(0, 0, 0, 0)" || ws != "pre" {
		t.Errorf("curl block: code background %s, pre white-space %s; want transparent and pre", bg, ws)
	}

	email := d.size + "@example.com"
	d.do("sign up",
		chromedp.Navigate(d.base+"/signup"), chromedp.WaitVisible(css("#email")),
		chromedp.SendKeys(css("#email"), email), chromedp.SendKeys(css("#password"), WebPassword),
		chromedp.SendKeys(css("#password_again"), WebPassword), chromedp.Submit(css("#email")),
		chromedp.WaitVisible(css(".apps")))
	d.check("apps-welcome")
	d.visit("dashboard-new", "/") // the first-run guide at the top

	// Bug 1: a reload after creating a key makes no key and shows none.
	d.do("create a key", chromedp.Navigate(d.base+"/settings/keys"), chromedp.WaitVisible(css("#name")),
		chromedp.SendKeys(css("#name"), "reload-test"), chromedp.Submit(css("#name")), chromedp.WaitVisible(css("#new-key")))
	d.check("key-created")
	d.do("reload", chromedp.Reload(), chromedp.WaitVisible(css("main h1")))
	if eval[bool](d, `!!document.querySelector("#new-key")`) || eval[int](d, `[...document.querySelectorAll("td")].filter(td => td.textContent === "reload-test").length`) != 1 {
		t.Errorf("after a reload: the key is shown again, or another key was made")
	}
	d.check("keys")
	revoke := eval[string](d, `document.querySelector('a[href$="/revoke"]').getAttribute("href")`)
	d.visit("revoke-confirm", revoke)
	d.brandsAndWebhooks()

	// Bug 6: a field error beside its field; the values kept.
	d.do("a form with errors", chromedp.Navigate(d.base+"/apps/cold-email-writer"), chromedp.WaitVisible(css("#run-form")),
		chromedp.SetValue(css("#f-target_role"), strings.Repeat("r", 501)), chromedp.SetValue(css("#f-proof_points"), "kept"),
		chromedp.Submit(css("#run-form")), chromedp.WaitVisible(css("#e-product_description")))
	if !eval[bool](d, `document.querySelector("#e-product_description").closest(".field") === document.querySelector("#f-product_description").closest(".field")`) ||
		eval[string](d, `document.querySelector("#f-product_description").getAttribute("aria-invalid")`) != "true" ||
		eval[int](d, `document.querySelector("#f-target_role").value.length`) != 501 || eval[string](d, `document.querySelector("#f-proof_points").value`) != "kept" {
		t.Errorf("the field error is not beside its field, or the values were not kept")
	}
	d.check("app-form-errors")

	// Bug 5: a yes/no field sits on the line of its label.
	d.visit("app-checkbox", "/apps/linkedin-post-writer")
	if !eval[bool](d, `(() => { const b = document.querySelector("input[type=checkbox]").getBoundingClientRect(),
		l = document.querySelector("label[for='" + document.querySelector("input[type=checkbox]").id + "']").getBoundingClientRect();
		return b.top < l.bottom && l.top < b.bottom && b.right <= l.left; })()`) {
		t.Errorf("the checkbox is not inline, left of its label")
	}

	// Bug 4: cancel from the run page ends the run and shows the refund.
	d.do("start a held run", chromedp.Navigate(d.base+"/apps/"+TestAppSlug), chromedp.WaitVisible(css("#run-form")),
		chromedp.SetValue(css("#f-mode"), "hold"), chromedp.Submit(css("#run-form")), chromedp.WaitVisible(css("#cancel-form")))
	d.check("run-active")
	// Cancel asks once.
	d.do("cancel it", chromedp.Submit(css("#cancel-form")), chromedp.WaitVisible(css("#confirm-cancel")))
	d.check("cancel-confirm")
	d.do("confirm the cancel", chromedp.Submit(css("#confirm-cancel")), chromedp.WaitVisible(css("#refund")))
	if got := eval[string](d, `document.querySelector("#refund").textContent`); !strings.Contains(got, "10 Credits were refunded") {
		t.Errorf("after the cancel: %q", got)
	}
	d.check("run-canceled")
	// Run again fills the form in.
	d.do("run again", chromedp.Click(css("#run-again")), chromedp.WaitVisible(css("#run-form")))
	if got := eval[string](d, `document.querySelector("#f-mode").value`); got != "hold" {
		t.Errorf("Run again: mode %q, want hold", got)
	}
	d.check("run-again")

	// A finished cold email run: its emails as cards.
	d.fake.Script(llmtest.Reply{Text: ModelSequence})
	d.do("a cold email run", chromedp.Navigate(d.base+"/apps/cold-email-writer"), chromedp.WaitVisible(css("#run-form")),
		chromedp.SendKeys(css("#f-product_description"), "Acme Ledger automates bookkeeping for small agencies."),
		chromedp.SendKeys(css("#f-target_role"), "Agency founders"), chromedp.Submit(css("#run-form")),
		// The run page's cards: the App page shows its example output as
		// cards too, so ".cards .card" alone was met before the form's
		// navigation began, and the check that followed ran into it.
		chromedp.WaitVisible(css("#live ~ .cards .card")))
	d.check("run-completed")

	// The App search narrows the cards as one types.
	d.do("search the Apps", chromedp.Navigate(d.base+"/apps"), chromedp.WaitVisible(css("#app-search")),
		chromedp.SendKeys(css("#app-search"), "battlecard"))
	if n, count := eval[int](d, `[...document.querySelectorAll("[data-search]")].filter(c => c.offsetParent !== null).length`),
		eval[string](d, `document.querySelector("#app-count").textContent`); n != 1 || count != "1 App matches “battlecard”." {
		t.Errorf("typing battlecard leaves %d cards shown, %q", n, count)
	}
	d.check("apps-search")
	for _, p := range []struct{ name, path string }{
		{"apps", "/apps"}, {"app", "/apps/cold-email-writer"}, {"app-reads-a-page", "/apps/landing-page-audit"},
		{"runs", "/runs"}, {"credits", "/credits"}, {"dashboard", "/"}, {"usage", "/usage"}, {"signout", "/signout"},
	} {
		d.visit(p.name, p.path)
		if p.name == "usage" { // its tables, in <details> under the charts
			eval[bool](d, `document.querySelectorAll("details").forEach(e => e.open = true); true`)
			d.check("usage-tables")
		}
	}

	d.deliveries()

	// The statement as CSV, as its link downloads it.
	d.do("the statement", chromedp.Navigate(d.base+"/credits"), chromedp.WaitVisible(css(`a[href^="/credits/statement.csv"]`)))
	csvText, err := chromedp.Run(d.ctx, chromedp.Evaluate[string](`fetch(document.querySelector('a[href^="/credits/statement.csv"]').href).then(async r => r.headers.get("content-type") + "\n" + await r.text())`,
		chromedp.EvalAwaitPromise))
	if lines := strings.Split(strings.TrimSpace(csvText), "\n"); err != nil || len(lines) < 4 || lines[0] != "text/csv; charset=utf-8" ||
		lines[1] != "time_utc,type,amount,balance,run_no,app,reference" || !strings.Contains(csvText, ",Cold Email Writer,") {
		t.Errorf("the statement CSV: %v\n%s", err, csvText)
	}

	if d.mail != nil {
		d.resetPassword(email)
	}
	files, _ := filepath.Glob(filepath.Join(d.shots, d.size+"-*.png"))
	if len(files) < 21 {
		t.Errorf("%d screenshots at %s, want one per page", len(files), d.size)
	}
}

// resetPassword signs out, asks for a reset link, reads the mail in
// mailpit, follows its link, chooses a new password, and signs in with it.
func (d *webDriver) resetPassword(email string) {
	t, css := d.t, func(s string) chromedp.CSS { return chromedp.CSS(s) }
	const newPassword = "a new password, chosen after the mail"
	d.do("sign out", chromedp.Navigate(d.base+"/signout"), chromedp.WaitVisible(css("main form button")),
		chromedp.Click(css("main form button")), chromedp.WaitVisible(css(`a[href="/signup"]`)))
	d.do("forgot", chromedp.Navigate(d.base+"/signin"), chromedp.WaitVisible(css(`a[href="/password/forgot"]`)),
		chromedp.Click(css(`a[href="/password/forgot"]`)), chromedp.WaitVisible(css("#email")))
	d.check("password-forgot")
	// #reset-sent is on the next page only: the forgot page has a link to
	// sign in too, and waiting for that raced the navigation (once 30 s).
	d.do("ask for a link", chromedp.SendKeys(css("#email"), email), chromedp.Submit(css("#email")),
		chromedp.WaitVisible(css("#reset-sent")))
	d.check("password-sent")
	m := d.mail.Latest(t, email)
	link := ResetLink(t, m.Text)
	if !strings.HasPrefix(link, d.base+"/password/reset?token=") {
		t.Fatalf("the mail's link %q is not to this site", link)
	}
	d.do("follow the mail's link", chromedp.Navigate(link), chromedp.WaitVisible(css("#password_again")))
	d.check("password-reset")
	d.do("choose a new password", chromedp.SendKeys(css("#password"), newPassword), chromedp.SendKeys(css("#password_again"), newPassword),
		chromedp.Submit(css("#password")), chromedp.WaitVisible(css("#reset-done")))
	d.check("password-changed")
	d.do("sign out again", chromedp.Navigate(d.base+"/signout"), chromedp.WaitVisible(css("main form button")),
		chromedp.Click(css("main form button")), chromedp.WaitVisible(css(`a[href="/signup"]`)))
	d.do("sign in with the new password", chromedp.Navigate(d.base+"/signin"), chromedp.WaitVisible(css("#email")),
		chromedp.SendKeys(css("#email"), email), chromedp.SendKeys(css("#password"), newPassword), chromedp.Submit(css("#email")),
		chromedp.WaitVisible(css("#dashboard-balance")))
	d.check("signed-in-again")
}

// settled waits until the page the browser is on has loaded, its
// stylesheet with it. chromedp's Navigate waits for that, but not a page
// the site's script or a form opened: WaitVisible finds its elements
// before the stylesheet is in, and on a loaded machine a check then
// measured the page unstyled (TestTheBrowserCheckWaitsForTheStylesheet).
// An evaluation that fails is a navigation in between: it asks again.
//
// A load that is complete is not enough: a CI run once measured a page
// whose document was complete with the stylesheet not applied (its code
// blocks overflowed as the browser's defaults let them). So it also waits
// until the stylesheet is applied (main has the site's max-width). A page
// still unstyled 5 s after its load asks for its stylesheet once more (a
// copy of its link, not a reload, which would send a form again), and the
// test logs that it did; one that never gets it fails, saying so.
func (d *webDriver) settled() {
	d.t.Helper()
	unstyledSince, asked := time.Time{}, false
	for deadline := time.Now().Add(30 * time.Second); ; {
		state, err := chromedp.Run(d.ctx, chromedp.Evaluate[string](`document.readyState + (`+styledJS+` ? "" : " unstyled")`))
		if err == nil && state == "complete" {
			return
		}
		if err != nil || state != "complete unstyled" {
			unstyledSince = time.Time{}
		} else if unstyledSince.IsZero() {
			unstyledSince = time.Now()
		} else if !asked && time.Since(unstyledSince) > 5*time.Second {
			asked = true
			d.t.Logf("loaded 5 s ago, still unstyled: asking for the stylesheet again (%s); %s", d.size, d.where())
			_, _ = chromedp.Run(d.ctx, chromedp.Evaluate[bool](`document.querySelectorAll('link[rel="stylesheet"]').forEach(l => l.after(l.cloneNode())); true`))
		}
		if time.Now().After(deadline) || d.ctx.Err() != nil {
			d.t.Fatalf("the page did not finish loading with its stylesheet (%s): %q %v; %s", d.size, state, err, d.where())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// styledJS is true once the site's stylesheet is applied to the page.
const styledJS = `(document.querySelector("main") !== null && getComputedStyle(document.querySelector("main")).maxWidth !== "none")`

// where says which page the browser is on and how it got there, for a
// failure's message.
func (d *webDriver) where() string {
	s, err := chromedp.Run(d.ctx, chromedp.Evaluate[string](`location.pathname + " (" + document.readyState + ", " +
		(performance.getEntriesByType("navigation")[0] || {}).type + ", " + (`+styledJS+` ? "styled" : "unstyled") + ", stylesheets " +
		[...document.styleSheets].map(s => (s.href || "inline") + ":" + (() => { try { return s.cssRules.length } catch (e) { return "?" } })()).join(" ") + ")"`))
	if err != nil {
		return "page unknown: " + err.Error()
	}
	return "page " + s
}
