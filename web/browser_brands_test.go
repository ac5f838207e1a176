package web_test

import (
	"strings"
	"time"

	. "github.com/apprun/apprun/node/nodetest"

	"github.com/chromedp/chromedp"
)

// brandsAndWebhooks walks the brand contexts and webhooks pages in the
// browser: a refused form, a brand context created and picked on the run
// form, its edit and delete pages; an endpoint added (the secret shown
// once), and the rotate and remove pages. The deliveries are looked at by
// deliveries, once runs have finished.
func (d *webDriver) brandsAndWebhooks() {
	t, css := d.t, func(s string) chromedp.CSS { return chromedp.CSS(s) }
	d.visit("brands-empty", "/settings/brands")
	d.do("a brand context without a name", chromedp.SetValue(css("#b-voice"), "plain, warm"), chromedp.Submit(css("#b-name")),
		chromedp.WaitVisible(css("#be-name")))
	if got := eval[string](d, `document.querySelector("#be-name").textContent`); got != "Name is required." {
		t.Errorf("the name's error: %q", got)
	}
	d.check("brand-form-errors")
	d.do("create a brand context", chromedp.SendKeys(css("#b-name"), "Acme Ledger"), chromedp.Submit(css("#b-name")),
		chromedp.WaitVisible(css("main table")))
	d.check("brands")
	edit := eval[string](d, `document.querySelector('main td a[href^="/settings/brands/bc_"]').getAttribute("href")`)
	d.visit("brand-edit", edit)
	d.visit("brand-delete", edit+"/delete")
	d.do("the picker", chromedp.Navigate(d.base+"/apps/"+TestAppSlug), chromedp.WaitVisible(css("#f-brand_context_id")))
	if got := eval[string](d, `[...document.querySelectorAll("#f-brand_context_id option")].map(o => o.textContent).join("|")`); got != "None|Acme Ledger" {
		t.Errorf("the picker's options: %q", got)
	}
	d.check("app-brand-picker")

	rc := NewReceiver(d.t)
	d.visit("webhooks-empty", "/settings/webhooks")
	d.do("add an endpoint", chromedp.SendKeys(css("#url"), rc.URL+"/hooks"), chromedp.Submit(css("#url")), chromedp.WaitVisible(css("#new-secret")))
	d.check("webhook-secret")
	d.visit("secret-rotate", "/settings/webhooks/secret/rotate")
	d.do("the endpoint list", chromedp.Navigate(d.base+"/settings/webhooks"), chromedp.WaitVisible(css("main")))
	d.visit("endpoint-remove", eval[string](d, `document.querySelector('a[href$="/remove"]').getAttribute("href")`))
}

// deliveries looks at the webhooks page once it lists a delivery.
func (d *webDriver) deliveries() {
	for deadline := time.Now().Add(30 * time.Second); ; {
		d.do("the webhooks page", chromedp.Navigate(d.base+"/settings/webhooks"), chromedp.WaitVisible(chromedp.CSS("main")))
		if strings.Contains(eval[string](d, `document.querySelector("main").textContent`), "Delivered") {
			break
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("no delivery on the webhooks page after 30 s (%s)", d.size)
		}
		time.Sleep(100 * time.Millisecond)
	}
	d.check("webhooks")
}
