package nodetest

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/node"
)

// Browser is a cookie-keeping client for the website that does not follow
// redirects, so tests see each answer.
type Browser struct {
	t *testing.T
	h *Harness
	// Client keeps the browser's cookies and follows no redirect.
	Client *http.Client
}

func (h *Harness) Browser(t *testing.T) *Browser {
	jar, _ := cookiejar.New(nil)
	return &Browser{t: t, h: h, Client: &http.Client{Jar: jar, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type Page struct {
	Status   int
	Location string
	Body     string
	Header   http.Header
}

func (b *Browser) Send(method, path string, form url.Values, hdr ...string) Page {
	b.t.Helper()
	var req *http.Request
	if form != nil {
		req, _ = http.NewRequest(method, b.h.Srv.URL+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		req, _ = http.NewRequest(method, b.h.Srv.URL+path, nil)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := b.Client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return Page{Status: resp.StatusCode, Location: resp.Header.Get("Location"), Body: sb.String(), Header: resp.Header}
}

func (b *Browser) Get(path string) Page { return b.Send("GET", path, nil) }

func (b *Browser) Post(path string, form url.Values, hdr ...string) Page {
	return b.Send("POST", path, form, hdr...)
}

const WebPassword = "correct-horse-battery"

func (b *Browser) SignUp(email string) Page {
	b.t.Helper()
	p := b.Post("/signup", url.Values{"email": {email}, "password": {WebPassword}, "password_again": {WebPassword}})
	if p.Status != http.StatusSeeOther {
		b.t.Fatalf("sign up %s: %d %s", email, p.Status, p.Body)
	}
	return p
}

var apiKeyShown = regexp.MustCompile(`id="new-key"[^>]*>(ak_[a-z0-9]+)<`)

// CreateKey makes a key the way a browser does: the POST redirects
// (post-redirect-get) and the page it lands on shows the key, once.
func (b *Browser) CreateKey(name string) string {
	b.t.Helper()
	p := b.Post("/settings/keys", url.Values{"name": {name}})
	if p.Status != http.StatusSeeOther || p.Location != "/settings/keys" {
		b.t.Fatalf("create key: %d %s %s", p.Status, p.Location, p.Body)
	}
	shown := b.Get(p.Location)
	m := apiKeyShown.FindStringSubmatch(shown.Body)
	if shown.Status != 200 || m == nil {
		b.t.Fatalf("the page after creating a key: %d %s", shown.Status, shown.Body)
	}
	return m[1]
}

var FormToken = regexp.MustCompile(`name="idempotency_key" value="([^"]+)"`)

// StartColdEmail sends the cold email writer's form and returns the run.
func (b *Browser) StartColdEmail() string {
	b.t.Helper()
	return b.StartApp("cold-email-writer", url.Values{"product_description": {"Acme Ledger automates bookkeeping."},
		"target_role": {"Agency founders"}})
}

// StartApp sends an App's run form with the fields given and returns the
// run.
func (b *Browser) StartApp(slug string, fields url.Values) string {
	b.t.Helper()
	tok := FormToken.FindStringSubmatch(b.Get("/apps/" + slug).Body)
	if tok == nil {
		b.t.Fatal("no form on the reference page")
	}
	form := url.Values{"idempotency_key": {tok[1]}}
	for k, v := range fields {
		form[k] = v
	}
	p := b.Post("/apps/"+slug+"/runs", form)
	if p.Status != http.StatusSeeOther || !strings.HasPrefix(p.Location, "/runs/run_") {
		b.t.Fatalf("start run: %d %s %s", p.Status, p.Location, p.Body)
	}
	return strings.TrimPrefix(p.Location, "/runs/")
}

func WithSignupCredits(n int64) Option { return func(c *node.Config) { c.SignupCredits = n } }

func MustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// AccountOfSession finds the browser's account through its key.
func AccountOfSession(t *testing.T, h *Harness, b *Browser) string {
	key := b.CreateKey("probe")
	k, err := h.Node.Reads().KeyByHash(engine.HashKey(key))
	if err != nil {
		t.Fatal(err)
	}
	return k.AccountID
}
