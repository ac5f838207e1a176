package web_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"

	"github.com/apprun/apprun/service"
)

var (
	secretShown = regexp.MustCompile(`id="new-secret" class="secret">(whsec_[A-Za-z0-9+/=]+)<`)
	endpointID  = regexp.MustCompile(`/settings/webhooks/endpoints/(wh_[a-z2-7]+)/remove`)
)

// newSecret is the signing secret the webhooks page shows whole, once.
func newSecret(t *testing.T, b *Browser) string {
	t.Helper()
	page := html.UnescapeString(b.Get("/settings/webhooks").Body)
	m := secretShown.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the webhooks page does not show the new signing secret:\n%s", page)
	}
	if again := html.UnescapeString(b.Get("/settings/webhooks").Body); strings.Contains(again, m[1]) || !strings.Contains(again, `id="secret-start">`+m[1][:10]+"…<") {
		t.Fatal("the signing secret is shown whole again, or its start is not shown")
	}
	return m[1]
}

// signedWith says whether a delivery's signature is made with secret.
func signedWith(t *testing.T, secret string, d Delivery) bool {
	t.Helper()
	ts, _ := strconv.ParseInt(d.Header.Get("webhook-timestamp"), 10, 64)
	sig, err := service.Sign(secret, d.Header.Get("webhook-id"), ts, d.Body)
	if err != nil {
		t.Fatal(err)
	}
	return d.Header.Get("webhook-signature") == sig
}

// waitPage polls a page until it has every one of want (deliveries are
// recorded off the request's path).
func waitPage(t *testing.T, b *Browser, path string, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		page := b.Get(path).Body
		missing := ""
		for _, w := range want {
			if !strings.Contains(page, w) {
				missing = w
			}
		}
		if missing == "" {
			return page
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s lacks %q after 30 s:\n%s", path, missing, page)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The webhooks page: an endpoint added there receives the runs started
// after it, signed with the secret the page showed once; the delivery
// shows with its status and attempts; Redeliver sends it again, once a
// minute, saying so in words; a rotated secret signs what follows; the
// endpoint is removed after asking. Another account touches none of it.
func TestWebhooksAreManagedAndDeliveriesShownOnTheirPage(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits), WithSignupCredits(100), WithWebhooks(50*time.Millisecond))
	rc := NewReceiver(t)
	b, bob := h.Browser(t), h.Browser(t)
	b.SignUp("hooks@example.com")
	bob.SignUp("bob@example.com")
	empty := b.Get("/settings/webhooks").Body
	for _, want := range []string{"No endpoints yet", "no signing secret yet", "No deliveries yet", `href="/settings/webhooks" aria-current="page"`} {
		if !strings.Contains(empty, want) {
			t.Fatalf("the empty webhooks page lacks %q:\n%s", want, empty)
		}
	}

	if p := b.Post("/settings/webhooks/endpoints", url.Values{"url": {rc.URL + "/hooks"}}); p.Status != http.StatusSeeOther || p.Location != "/settings/webhooks" {
		t.Fatalf("add an endpoint: %d %s", p.Status, p.Location)
	}
	first := newSecret(t, b) // made with the first endpoint
	page := b.Get("/settings/webhooks").Body
	ep := endpointID.FindStringSubmatch(page)
	if ep == nil || !strings.Contains(page, "<code>"+rc.URL+"/hooks</code>") {
		t.Fatalf("the endpoint is not listed:\n%s", page)
	}

	p := startTestRun(t, b, nil)
	runNo := strings.TrimPrefix(p.Location, "/runs/")
	got := rc.Await(t, 1)
	if !signedWith(t, first, got[0]) {
		t.Fatal("the delivery is not signed with the secret the page showed")
	}
	waitPage(t, b, "/settings/webhooks", `<a href="/runs/`+runNo+`">Test App</a><br><code class="meta">`+runNo+`</code>`, ">Delivered<", `data-label="Attempts" class="num">1<`, "HTTP 200")

	// Redeliver, then again at once: refused, in words.
	redeliver := "/settings/webhooks/deliveries/" + runNo + "/redeliver"
	if p := b.Post(redeliver, url.Values{}); p.Status != http.StatusSeeOther {
		t.Fatalf("redeliver: %d", p.Status)
	}
	if page := b.Get("/settings/webhooks").Body; !strings.Contains(page, "will be sent again in a moment") {
		t.Fatalf("after a redelivery:\n%s", page)
	}
	if again := rc.Await(t, 2); again[1].Header.Get("webhook-id") != got[0].Header.Get("webhook-id") {
		t.Fatal("the redelivery is not the same delivery")
	}
	b.Post(redeliver, url.Values{})
	limited := b.Get("/settings/webhooks").Body
	if !regexp.MustCompile(`Run `+runNo+`&#39;s webhook was sent less than a minute ago; try again in [1-6]?[0-9] s\.`).MatchString(limited) ||
		strings.Contains(limited, "1m0s") || strings.Contains(limited, "rate_limited") {
		t.Fatalf("a second redelivery at once: want it refused in words:\n%s", limited)
	}

	// Another account cannot remove the endpoint or redeliver the run.
	for _, p := range []Page{bob.Get("/settings/webhooks/endpoints/" + ep[1] + "/remove"), bob.Post("/settings/webhooks/endpoints/"+ep[1]+"/remove", url.Values{}),
		bob.Post(redeliver, url.Values{})} {
		if p.Status != 404 {
			t.Fatalf("Bob at Ann's webhooks: %d, want 404", p.Status)
		}
	}
	if page := bob.Get("/settings/webhooks").Body; strings.Contains(page, runNo) || strings.Contains(page, rc.URL) {
		t.Fatal("Bob's webhooks page shows Ann's")
	}

	// Rotate: asked first; the new secret is shown once and signs what follows.
	if confirm := b.Get("/settings/webhooks/secret/rotate"); confirm.Status != 200 || !strings.Contains(html.UnescapeString(confirm.Body), first[:10]+"…") ||
		strings.Contains(html.UnescapeString(confirm.Body), first) {
		t.Fatalf("the rotate page: %d %s", confirm.Status, confirm.Body)
	}
	if p := b.Post("/settings/webhooks/secret/rotate", url.Values{}); p.Status != http.StatusSeeOther {
		t.Fatalf("rotate: %d", p.Status)
	}
	second := newSecret(t, b)
	if second == first {
		t.Fatal("the rotation kept the secret")
	}
	startTestRun(t, b, nil)
	later := rc.Await(t, 3)[2]
	if !signedWith(t, second, later) || signedWith(t, first, later) {
		t.Fatal("a delivery after the rotation is not signed with the new secret alone")
	}

	// Remove, after asking.
	if confirm := b.Get("/settings/webhooks/endpoints/" + ep[1] + "/remove"); confirm.Status != 200 || !strings.Contains(confirm.Body, "Remove this webhook endpoint?") {
		t.Fatalf("the remove page: %d %s", confirm.Status, confirm.Body)
	}
	if p := b.Post("/settings/webhooks/endpoints/"+ep[1]+"/remove", url.Values{}); p.Status != http.StatusSeeOther {
		t.Fatalf("remove: %d", p.Status)
	}
	if page := b.Get("/settings/webhooks").Body; !strings.Contains(page, "was removed") || !strings.Contains(page, "No endpoints yet") {
		t.Fatalf("after removing the endpoint:\n%s", page)
	}
}

// An address that cannot receive webhooks is refused beside the field in
// words, never the API's message or a Go error; a node in production
// refuses this machine and private networks.
func TestAWebhookAddressIsRefusedInWords(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits)) // production: no private receivers
	b := h.Browser(t)
	b.SignUp("words@example.com")
	for _, tc := range []struct{ url, want string }{
		{"", "Enter the address that should receive your runs&#39; results."},
		{"ftp://example.com/x", "Enter a full web address starting with https://"},
		{"https://user:pw@example.com/", "Enter a full web address starting with https:// (or http://), without a user name or password."},
		{"https://example.com:99999/x", "The port in this address must be a number from 1 to 65535."},
		{"http://0x7f000001/x", "Write the IP address as four numbers separated by dots"},
		{"http://localhost/x", "This address points at the machine this service runs on."},
		{"http://10.0.0.1/x", "This address is on a private network or reserved."},
		{"http://:18699/nohost", "This address names no host"},
		{"http://./", "This address names no host"},
		{"https://example.com/" + strings.Repeat("a", 2000), "This address is too long: use at most 2,000 characters (this has 2,020)."},
	} {
		p := b.Post("/settings/webhooks/endpoints", url.Values{"url": {tc.url}})
		if p.Status != http.StatusSeeOther || p.Location != "/settings/webhooks#add" {
			t.Fatalf("%q: %d %s", tc.url, p.Status, p.Location)
		}
		page := b.Get("/settings/webhooks").Body
		if !strings.Contains(page, `id="url-error">`+tc.want) || !strings.Contains(page, `aria-invalid="true"`) || strings.Contains(page, "webhook_url") ||
			strings.Contains(page, "must be an http(s)") || (tc.url != "" && !strings.Contains(page, `value="`+strings.ReplaceAll(tc.url, "&", "&amp;")+`"`)) {
			t.Fatalf("%q: want %q beside the field, the address kept, and no API wording:\n%s", tc.url, tc.want, page)
		}
	}
	if strings.Contains(b.Get("/settings/webhooks").Body, "/settings/webhooks/endpoints/wh_") {
		t.Fatal("a refused address was added")
	}
}

// A run sent to two endpoints shows a delivery for each, with one
// Redeliver button: a redelivery sends to every address of the run.
func TestARunWithTwoEndpointsHasOneRedeliverButton(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits), WithSignupCredits(100), WithWebhooks(50*time.Millisecond))
	one, two := NewReceiver(t), NewReceiver(t)
	b := h.Browser(t)
	b.SignUp("two@example.com")
	b.Post("/settings/webhooks/endpoints", url.Values{"url": {one.URL + "/one"}})
	b.Post("/settings/webhooks/endpoints", url.Values{"url": {two.URL + "/two"}})
	runNo := strings.TrimPrefix(startTestRun(t, b, nil).Location, "/runs/")
	one.Await(t, 1)
	two.Await(t, 1)
	page := waitPage(t, b, "/settings/webhooks", one.URL+"/one</td>", two.URL+"/two</td>")
	if n := strings.Count(page, `action="/settings/webhooks/deliveries/`+runNo+`/redeliver"`); n != 1 {
		t.Fatalf("%d Redeliver buttons for one run with two deliveries, want 1", n)
	}
}
