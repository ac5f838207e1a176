package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"

	"github.com/apprun/apprun/llm/llmtest"
	"github.com/apprun/apprun/node"
	"github.com/chromedp/chromedp"
)

// A run that waits on a busy provider, then gets replies it cannot use,
// watched in Chromium: the waits are said on one progress line, updated
// in place (never added to the step list), and the failed run's page
// says what happened in words, with the refund and the code, and shows
// no parser's or Go's message. axe finds nothing on either page. At
// 1280×900 and at 390×844, side by side: each size has its own provider
// and node (a provider answers its runs' calls in turn), and most of the
// test is the provider's waits.
func TestBrowserShowsWaitsInPlaceAndAFailureInWords(t *testing.T) {
	t.Parallel()
	bin := ChromiumOrSkip(t)
	shots, axe := shotsDir(t), axeSource(t)
	for _, size := range []struct {
		name string
		w, h int64
	}{{"desktop", 1280, 900}, {"phone", 390, 844}} {
		t.Run(size.name, func(t *testing.T) {
			t.Parallel()
			fake := llmtest.New()
			defer fake.Close()
			h := Start(t, WithLimits(NoLimits), WithSignupCredits(500), WithModel(fake), func(c *node.Config) { c.Model.MaxAttempts = 5 })
			ctx := StartChromium(t, bin, size.w, size.h, 90*time.Second)
			d := &webDriver{t: t, ctx: ctx, fake: fake, base: h.Srv.URL, shots: shots, size: size.name + "-failure", w: size.w, h: size.h, axe: axe}
			watchAWaitAndAFailure(t, d)
		})
	}
}

func watchAWaitAndAFailure(t *testing.T, d *webDriver) {
	busy := llmtest.Reply{Status: 429, Header: http.Header{"Retry-After": {"1"}}}
	// The last wait is long enough for the page to be checked while it
	// shows it: with 1 s, a loaded machine saw the run fail and the page
	// reload in the middle of the check (axe: target navigated).
	longBusy := llmtest.Reply{Status: 429, Header: http.Header{"Retry-After": {"10"}}}
	d.fake.Script(busy, busy, longBusy, llmtest.Reply{Text: "Sure! Here are your emails, I hope you like them."},
		llmtest.Reply{Text: "Sorry, here they are again: 1. Hello"})
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	d.do("sign up",
		chromedp.Navigate(d.base+"/signup"), chromedp.WaitVisible(css("#email")),
		chromedp.SendKeys(css("#email"), d.size+"@example.com"), chromedp.SendKeys(css("#password"), WebPassword),
		chromedp.SendKeys(css("#password_again"), WebPassword), chromedp.Submit(css("#email")),
		chromedp.WaitVisible(css(".apps")))
	d.do("start a run",
		chromedp.Navigate(d.base+"/apps/cold-email-writer"), chromedp.WaitVisible(css("#run-form")),
		chromedp.SendKeys(css("#f-product_description"), "Acme Ledger automates bookkeeping for small agencies."),
		chromedp.SendKeys(css("#f-target_role"), "Agency founders"),
		chromedp.Submit(css("#run-form")), chromedp.WaitVisible(css("#progress-line")))
	// Every text the line takes, and the most items the list has, until
	// the page reloads with the failure.
	_ = eval[bool](d, `(() => {
		const seen = () => {
			const line = document.querySelector("#progress-line");
			const t = line ? line.textContent : "";
			if (t && sessionStorage.getItem("last") !== t) {
				sessionStorage.setItem("lines", (sessionStorage.getItem("lines") || "") + t + "\n");
				sessionStorage.setItem("last", t);
			}
			const items = [...document.querySelectorAll("#progress li")].map((li) => li.textContent);
			sessionStorage.setItem("items", JSON.stringify(items.length > JSON.parse(sessionStorage.getItem("items") || "[]").length ? items : JSON.parse(sessionStorage.getItem("items") || "[]")));
		};
		seen();
		new MutationObserver(seen).observe(document.body, {subtree: true, childList: true, characterData: true});
		return true;
	})()`)
	d.do("wait for the second wait", chromedp.Poll[chromedp.Void](`(document.querySelector("#progress-line") || {}).textContent?.includes("attempt 4 of 5")`))
	d.check("run-waiting")
	d.do("wait for the failure", chromedp.WaitVisible(css("#failure-words")))
	lines := strings.Split(strings.TrimSpace(eval[string](d, `sessionStorage.getItem("lines")`)), "\n")
	items := eval[string](d, `sessionStorage.getItem("items")`)
	waits := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "Waiting for the model: attempt ") {
			waits++
		}
	}
	if waits < 2 || !strings.Contains(strings.Join(lines, "|"), "Waiting for the model: attempt 4 of 5, retrying in 10 s (the provider is busy: 429, too many requests)") {
		t.Fatalf("the progress line said %q, want the waits in turn", lines)
	}
	if strings.Contains(items, "Waiting") || strings.Count(items, `","`) > 3 {
		t.Fatalf("the step list grew with the waits: %s", items)
	}
	d.check("run-failed")
	if got := eval[string](d, `document.querySelector("#failure-words").textContent`); got != "The run failed. The model's reply was not the JSON object this App needs." {
		t.Fatalf("the failure says %q", got)
	}
	if code := eval[string](d, `document.querySelector("#failure-code").textContent`); code != "Code: model_reply_invalid" {
		t.Fatalf("the failure's code line: %q", code)
	}
	if usage := eval[string](d, `document.querySelector("#usage").textContent`); !strings.HasPrefix(usage, "2 model calls, ") || !strings.Contains(usage, " tokens (") {
		t.Fatalf("the run's usage line: %q, want its 2 calls (the reply and the repair) and their tokens", usage)
	}
	page := eval[string](d, `document.body.innerText`)
	if !strings.Contains(page, "25 Credits were refunded") {
		t.Fatalf("the page does not say the refund:\n%s", page)
	}
	for _, internal := range []string{"invalid character", "json:", "cannot unmarshal", "unexpected end", "looking for beginning", "it began", "goroutine", "<nil>"} {
		if strings.Contains(page, internal) {
			t.Errorf("the failed run's page shows %q:\n%s", internal, page)
		}
	}
}
