package web_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"

	"github.com/apprun/apprun/node"
)

func TestSignUpOpensAnAccountWithTheWelcomeBalance(t *testing.T) {
	h := Start(t, WithLimits(NoLimits), WithSignupCredits(300))
	b := h.Browser(t)
	p := b.SignUp("New.User@Example.com")
	if p.Location != "/apps?welcome=1" {
		t.Fatalf("after sign-up: %s", p.Location)
	}
	var cookie *http.Cookie
	for _, c := range (&http.Response{Header: p.Header}).Cookies() {
		if c.Name == "apprun_session" {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode || len(cookie.Value) < 40 {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Lax, a long random value", cookie)
	}
	credits := b.Get("/credits")
	if credits.Status != 200 || !strings.Contains(credits.Body, `id="balance">300 Credits<`) || !strings.Contains(credits.Body, "new.user@example.com") {
		t.Fatalf("credits page: %d %s", credits.Status, credits.Body)
	}
	// The same account as any other: the API and the ledger see it.
	key := b.CreateKey("first")
	if r := h.Do("GET", "/api/v1/account", key, nil); r.Status != 200 || !strings.Contains(string(r.Body), `"balance":300`) {
		t.Fatalf("API account: %d %s", r.Status, r.Body)
	}

	for _, tc := range []struct {
		name   string
		form   url.Values
		status int
		says   string
	}{
		{"an email taken (any case)", url.Values{"email": {"new.user@EXAMPLE.com"}, "password": {WebPassword}, "password_again": {WebPassword}}, 409,
			"An account with this email already exists."},
		{"a short password", url.Values{"email": {"b@example.com"}, "password": {"short"}, "password_again": {"short"}}, 422,
			"Use at least 10 characters"},
		{"three emoji (12 bytes)", url.Values{"email": {"b@example.com"}, "password": {"🔑🔑🔑"}, "password_again": {"🔑🔑🔑"}}, 422,
			"Use at least 10 characters"},
		{"19 emoji (76 bytes)", url.Values{"email": {"b@example.com"}, "password": {strings.Repeat("🔑", 19)}, "password_again": {strings.Repeat("🔑", 19)}}, 422,
			"This password is too long"},
		{"passwords that differ", url.Values{"email": {"c@example.com"}, "password": {WebPassword}, "password_again": {WebPassword + "x"}}, 422, "differ"},
		{"not an email", url.Values{"email": {"nobody"}, "password": {WebPassword}, "password_again": {WebPassword}}, 422, "Enter your email address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := h.Browser(t).Post("/signup", tc.form)
			if p.Status != tc.status || !strings.Contains(p.Body, tc.says) || p.Header.Get("Set-Cookie") != "" {
				t.Fatalf("%d, want %d saying %q and no session: %s", p.Status, tc.status, tc.says, p.Body)
			}
			for _, api := range []string{"password:", "email:", "sign in instead"} { // the API's words
				if strings.Contains(p.Body, api) {
					t.Fatalf("the page says the API's %q: %s", api, p.Body)
				}
			}
		})
	}
}

func TestSignInSignOutAndThrottling(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	h.Browser(t).SignUp("ann@example.com")
	b := h.Browser(t)
	if p := b.Get("/runs"); p.Status != http.StatusSeeOther || !strings.HasPrefix(p.Location, "/signin?next=") {
		t.Fatalf("signed out /runs: %d %s", p.Status, p.Location)
	}
	// A long query is not echoed into Location (the finding: 64 KB became
	// an 87 KB header): the return is to the path alone.
	if p := b.Get("/runs?q=" + strings.Repeat("a", 60<<10)); p.Status != http.StatusSeeOther || p.Location != "/signin?next=%2Fruns" || len(p.Body) > 4<<10 {
		t.Fatalf("signed out /runs with a 60 KiB query: %d to %.100s (%d bytes of body)", p.Status, p.Location, len(p.Body))
	}
	if p := b.Post("/signin", url.Values{"email": {"ann@example.com"}, "password": {"wrong password!"}}); p.Status != 401 ||
		!strings.Contains(p.Body, "Wrong email or password") || p.Header.Get("Set-Cookie") != "" {
		t.Fatalf("wrong password: %d %s", p.Status, p.Body)
	}
	if p := b.Post("/signin", url.Values{"email": {"nobody@example.com"}, "password": {WebPassword}}); p.Status != 401 ||
		!strings.Contains(p.Body, "Wrong email or password") {
		t.Fatalf("unknown email: %d, want the same answer as a wrong password", p.Status)
	}
	p := b.Post("/signin", url.Values{"email": {" ANN@example.com"}, "password": {WebPassword}, "next": {"/credits"}})
	if p.Status != http.StatusSeeOther || p.Location != "/credits" {
		t.Fatalf("sign in: %d %s", p.Status, p.Location)
	}
	if p := b.Get("/runs"); p.Status != 200 {
		t.Fatalf("signed in /runs: %d", p.Status)
	}
	// A next that leaves the site is not followed: the browser lands on
	// the dashboard.
	if p := h.Browser(t).Post("/signin", url.Values{"email": {"ann@example.com"}, "password": {WebPassword}, "next": {"//evil.example/"}}); p.Location != "/" {
		t.Fatalf("open redirect: %s", p.Location)
	}
	// Sign out ends the session on the server, not only in this browser.
	cookies := b.Client.Jar.Cookies(MustURL(h.Srv.URL))
	if p := b.Post("/signout", url.Values{}); p.Status != http.StatusSeeOther {
		t.Fatalf("sign out: %d", p.Status)
	}
	replay := h.Browser(t)
	replay.Client.Jar.SetCookies(MustURL(h.Srv.URL), cookies)
	if p := replay.Get("/runs"); p.Status != http.StatusSeeOther {
		t.Fatalf("the signed-out session still works: %d", p.Status)
	}

	// Five wrong passwords for an email, then even the right one waits.
	h.Browser(t).SignUp("target@example.com")
	t2 := h.Browser(t)
	for range 5 {
		if p := t2.Post("/signin", url.Values{"email": {"target@example.com"}, "password": {"guess guess guess"}}); p.Status != 401 {
			t.Fatalf("wrong password: %d", p.Status)
		}
	}
	if p := t2.Post("/signin", url.Values{"email": {"target@example.com"}, "password": {WebPassword}}); p.Status != 429 || !strings.Contains(p.Body, "Too many") {
		t.Fatalf("sixth try: %d, want 429", p.Status)
	}
}

func TestSessionsExpire(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits), func(c *node.Config) { c.SessionTTL = 1500 * time.Millisecond })
	b := h.Browser(t)
	b.SignUp("exp@example.com")
	if p := b.Get("/credits"); p.Status != 200 {
		t.Fatalf("fresh session: %d", p.Status)
	}
	deadline := time.Now().Add(10 * time.Second)
	for b.Get("/credits").Status == 200 { // the lifetime is a time, not an event: poll it
		if time.Now().After(deadline) {
			t.Fatal("the session outlived its 1.5s lifetime by 10s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if p := b.Get("/credits"); p.Status != http.StatusSeeOther || !strings.HasPrefix(p.Location, "/signin") {
		t.Fatalf("expired session: %d %s", p.Status, p.Location)
	}
}

func TestCrossOriginFormsAreRefused(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	b := h.Browser(t)
	b.SignUp("csrf@example.com")
	for _, hdr := range [][]string{{"Sec-Fetch-Site", "cross-site"}, {"Origin", "http://evil.example"}} {
		p := b.Post("/settings/keys", url.Values{"name": {"planted"}}, hdr...)
		if p.Status != http.StatusForbidden || !strings.Contains(p.Body, "another site") {
			t.Fatalf("POST with %s: %s: %d, want 403", hdr[0], hdr[1], p.Status)
		}
		if p := b.Post("/signout", url.Values{}, hdr...); p.Status != http.StatusForbidden {
			t.Fatalf("sign-out with %s: %d, want 403", hdr[0], p.Status)
		}
	}
	if strings.Contains(b.Get("/settings/keys").Body, "planted") {
		t.Fatal("a cross-origin form made a key")
	}
	if p := b.Post("/settings/keys", url.Values{"name": {"mine"}}, "Sec-Fetch-Site", "same-origin"); p.Status != http.StatusSeeOther {
		t.Fatalf("same-origin form: %d", p.Status)
	}
}

func TestKeysFromSettingsWorkOnTheAPIUntilRevoked(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	b := h.Browser(t)
	b.SignUp("keys@example.com")
	// A name the rules refuse is said in words, not the API's ("name: …").
	if p := b.Post("/settings/keys", url.Values{"name": {"two\nlines"}}); p.Status != http.StatusSeeOther {
		t.Fatalf("a refused name: %d", p.Status)
	}
	if page := b.Get("/settings/keys").Body; !strings.Contains(page, "Give the key a name of at most 100 characters, on one line.") {
		t.Fatalf("a refused name's page: %s", page)
	}
	key := b.CreateKey("CRM sync")
	list := b.Get("/settings/keys").Body
	if !strings.Contains(list, key[:7]+"…") || !strings.Contains(list, "CRM sync") || strings.Contains(list, key) {
		t.Fatalf("key list: want the prefix and the name, never the key:\n%s", list)
	}
	if r := h.Do("GET", "/api/v1/account", key, nil); r.Status != 200 {
		t.Fatalf("new key on the API: %d", r.Status)
	}
	// Its use shows as the last-used time (recorded off the request's path).
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(b.Get("/settings/keys").Body, "never") > 0 {
		if time.Now().After(deadline) {
			t.Fatal("last used still 'never' 10s after the key was used")
		}
		time.Sleep(20 * time.Millisecond)
	}
	keyID := regexp.MustCompile(`/settings/keys/(key_[a-z0-9]+)/revoke`).FindStringSubmatch(list)
	if keyID == nil {
		t.Fatal("no revoke form")
	}
	if p := b.Post("/settings/keys/"+keyID[1]+"/revoke", url.Values{}); p.Status != http.StatusSeeOther {
		t.Fatalf("revoke: %d", p.Status)
	}
	if r := h.Do("GET", "/api/v1/account", key, nil); r.Status != 401 {
		t.Fatalf("revoked key on the API at once: %d, want 401", r.Status)
	}
	if !strings.Contains(b.Get("/settings/keys").Body, "revoked") {
		t.Fatal("the list does not show the key revoked")
	}
}

func TestEveryPageShowsOnlyTheSignedInAccountsData(t *testing.T) {
	h := Start(t, WithLimits(NoLimits), WithSignupCredits(1000))
	ann, bob := h.Browser(t), h.Browser(t)
	ann.SignUp("ann@example.com")
	bob.SignUp("bob@example.com")
	bobKey := bob.CreateKey("bob's key")
	bobRun := bob.StartColdEmail()
	annRun := ann.StartColdEmail()
	bobKeyID := regexp.MustCompile(`/settings/keys/(key_[a-z0-9]+)/revoke`).FindStringSubmatch(bob.Get("/settings/keys").Body)[1]

	for _, path := range []string{"/runs", "/credits", "/settings/keys", "/runs/" + annRun} {
		body := ann.Get(path).Body
		if strings.Contains(body, bobRun) || strings.Contains(body, "bob@example.com") || strings.Contains(body, bobKeyID) || strings.Contains(body, bobKey[:7]) {
			t.Fatalf("%s shows Bob's data to Ann:\n%s", path, body)
		}
	}
	if !strings.Contains(ann.Get("/runs").Body, annRun) || !strings.Contains(ann.Get("/credits").Body, annRun) {
		t.Fatal("Ann's own run is missing from her pages")
	}
	if p := ann.Get("/runs/" + bobRun); p.Status != 404 {
		t.Fatalf("Ann opening Bob's run: %d, want 404", p.Status)
	}
	if p := ann.Post("/settings/keys/"+bobKeyID+"/revoke", url.Values{}); p.Status != 404 {
		t.Fatalf("Ann revoking Bob's key: %d, want 404", p.Status)
	}
	if r := h.Do("GET", "/api/v1/account", bobKey, nil); r.Status != 200 {
		t.Fatal("Bob's key stopped working after Ann's attempt")
	}
	// The event stream takes the session cookie, for the owner's runs only.
	if p := ann.Get("/api/v1/runs/" + bobRun + "/events"); p.Status != 404 {
		t.Fatalf("Ann streaming Bob's run: %d, want 404", p.Status)
	}
	if p := ann.Get("/api/v1/runs/" + annRun + "/events"); p.Status != 200 || !strings.Contains(p.Body, "event: completed") {
		t.Fatalf("Ann streaming her run with her session: %d %s", p.Status, p.Body)
	}
	// Other API calls do not take it: a cookie is not a key.
	req, _ := http.NewRequest("POST", h.Srv.URL+"/api/v1/runs", strings.NewReader(`{"app_slug":"cold-email-writer","input":{"product_description":"p","target_role":"r"}}`))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := ann.Client.Do(req); err != nil || resp.StatusCode != 401 {
		t.Fatalf("API create with only a session cookie: %v %v, want 401", resp.StatusCode, err)
	}
	if p := ann.Get("/api/v1/runs/" + annRun); p.Status != 401 {
		t.Fatalf("API read with only a session cookie: %d, want 401", p.Status)
	}
}

func TestARunFormSentTwiceMakesOneRunAndOneCharge(t *testing.T) {
	h := Start(t, WithLimits(NoLimits), WithSignupCredits(100))
	b := h.Browser(t)
	b.SignUp("twice@example.com")
	tok := FormToken.FindStringSubmatch(b.Get("/apps/cold-email-writer").Body)[1]
	form := url.Values{"idempotency_key": {tok}, "product_description": {"Acme Ledger"}, "target_role": {"Founders"}}
	first, second := b.Post("/apps/cold-email-writer/runs", form), b.Post("/apps/cold-email-writer/runs", form)
	if first.Status != 303 || first.Location != second.Location {
		t.Fatalf("two sends: %s and %s", first.Location, second.Location)
	}
	credits := b.Get("/credits").Body
	if !strings.Contains(credits, `id="balance">75 Credits<`) {
		t.Fatal("charged twice for one form")
	}
	if !strings.Contains(credits, ">−25<") || !strings.Contains(credits, ">&#43;100<") || strings.Contains(credits, "−-") {
		t.Fatalf("statement amounts: want −25 for the charge and +100 for the grant:\n%s", credits)
	}
	// Input the schema refuses: the form again with the reason, no charge.
	bad := b.Post("/apps/cold-email-writer/runs", url.Values{"idempotency_key": {"web-other"}, "product_description": {"x"},
		"target_role": {"y"}, "cta_goal": {"Sell hard"}})
	if bad.Status != http.StatusSeeOther {
		t.Fatalf("refused input: %d %s", bad.Status, bad.Body)
	}
	if again := b.Get("/apps/cold-email-writer").Body; !strings.Contains(again, `id="e-cta_goal">Choose one of the options.<`) || !strings.Contains(again, `id="run-form"`) {
		t.Fatalf("the form after refused input: %s", again)
	}
	if !strings.Contains(b.Get("/credits").Body, `id="balance">75 Credits<`) {
		t.Fatal("a refused form was charged")
	}
	acct, _, _ := h.Node.Reads().RunsOf(AccountOfSession(t, h, b), 0, 10)
	if len(acct) != 1 {
		t.Fatalf("%d runs, want 1", len(acct))
	}
	// A token that is not an Idempotency-Key (altered) is refused, as the
	// API refuses such a header; it was dropped, and the form then made a
	// run on every send.
	altered := url.Values{"idempotency_key": {"tab\tkey"}, "product_description": {"Acme Ledger"}, "target_role": {"Founders"}}
	if p := b.Post("/apps/cold-email-writer/runs", altered); p.Status != http.StatusSeeOther ||
		!strings.Contains(b.Get("/apps/cold-email-writer").Body, "this form was changed in a way we cannot read") {
		t.Fatalf("an altered token: %d %s", p.Status, p.Location)
	}
	// The first form's token again with other values: said in words, not
	// the API's (Idempotency-Key), and nothing charged.
	form.Set("target_role", "Agency founders")
	if p := b.Post("/apps/cold-email-writer/runs", form); p.Status != http.StatusSeeOther {
		t.Fatalf("a used token with other values: %d", p.Status)
	}
	if page := b.Get("/apps/cold-email-writer").Body; !strings.Contains(page, "this form was already sent, with other values") ||
		strings.Contains(page, "this Idempotency-Key") {
		t.Fatalf("a used token with other values: %s", page)
	}
	if !strings.Contains(b.Get("/credits").Body, `id="balance">75 Credits<`) {
		t.Fatal("a form with an altered token was charged")
	}
}

func TestReferencePagesComeFromTheSchema(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	p := h.Browser(t).Get("/apps/cold-email-writer")
	for _, want := range []string{"25 Credits a run", "15 minutes", "30 days", `<code class="name">product_<wbr>description</code>`, "<code>cold-email-writer</code>", "2000",
		`&#34;Interest check&#34;, &#34;Meeting&#34;, &#34;Introduction&#34;`, "curl -s -X POST http://", "/api/v1/runs"} {
		if !strings.Contains(p.Body, want) {
			t.Fatalf("reference page lacks %q:\n%s", want, p.Body)
		}
	}
	if q := h.Browser(t).Get("/apps/no-such-app"); q.Status != 404 {
		t.Fatalf("unknown App page: %d", q.Status)
	}
	if q := h.Browser(t).Get("/apps"); !strings.Contains(q.Body, "/apps/cold-email-writer") || strings.Contains(q.Body, "linkedin-post-writer") {
		t.Fatal("the catalog page should list exactly the runnable Apps")
	}
}
