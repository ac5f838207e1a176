package web_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apprun/apprun/edge"
	"github.com/apprun/apprun/internal/mailpit"
	. "github.com/apprun/apprun/node/nodetest"
	"github.com/apprun/apprun/web"
)

// customerWords fails the test when a page names an environment
// variable or an admin command: words on pages are for customers.
func customerWords(t *testing.T, what string, p Page) {
	t.Helper()
	for _, bad := range []string{"APPRUN_", "apprun admin", "SMTP", "smtp"} {
		if strings.Contains(p.Body, bad) {
			t.Errorf("%s names %q:\n%s", what, bad, p.Body)
		}
	}
}

// askReset asks for a reset link for email and checks the answer every
// request gets: the redirect to /password/sent.
func askReset(t *testing.T, b *Browser, email string) Page {
	t.Helper()
	p := b.Post("/password/forgot", url.Values{"email": {email}})
	if p.Status != http.StatusSeeOther || p.Location != "/password/sent" || p.Header.Get("Set-Cookie") != "" {
		t.Fatalf("asking for a link for %s: %d %s %s", email, p.Status, p.Location, p.Body)
	}
	return p
}

// pathOf is a link of the harness's site as a path the browser asks for.
func pathOf(t *testing.T, h *Harness, link string) string {
	t.Helper()
	path, ok := strings.CutPrefix(link, h.Srv.URL)
	if !ok {
		t.Fatalf("the link %s is not on the site %s", link, h.Srv.URL)
	}
	return path
}

// The whole reset through dev mode's outbox: sign-in links to it, the
// mail holds a link to this site, opening it twice uses nothing, a
// refused form leaves it working, the new password takes effect and the
// old one stops, every browser signed in before is signed out, and the
// link works once.
func TestPasswordResetByMail(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits), WithDevMail())
	before := h.Browser(t)
	before.SignUp("ann@example.com")
	signin := h.Browser(t).Get("/signin")
	if !strings.Contains(signin.Body, `<a href="/password/forgot">Forgot your password?</a>`) {
		t.Fatalf("the sign-in page has no link to reset the password:\n%s", signin.Body)
	}
	b := h.Browser(t)
	forgot := b.Get("/password/forgot")
	if forgot.Status != 200 || !strings.Contains(forgot.Body, `<label for="email">Email</label>`) || !strings.Contains(forgot.Body, `action="/password/forgot"`) {
		t.Fatalf("the forgot page: %d %s", forgot.Status, forgot.Body)
	}
	customerWords(t, "the forgot page", forgot)
	askReset(t, b, " ANN@example.com")
	sent := b.Get("/password/sent")
	if sent.Status != 200 || !strings.Contains(sent.Body, "If an account uses that address, we sent it a link") {
		t.Fatalf("the sent page: %d %s", sent.Status, sent.Body)
	}
	customerWords(t, "the sent page", sent)

	m := h.WaitMail("ann@example.com", 1)[0]
	link := ResetLink(t, m.Text)
	if m.Subject != "Reset your apprun password" || !strings.Contains(m.HTML, `href="`+link+`"`) {
		t.Fatalf("the mail: %+v", m)
	}
	path := pathOf(t, h, link)
	token := strings.TrimPrefix(path, "/password/reset?token=")
	for range 2 { // a mail scanner's prefetch uses nothing up
		if p := b.Get(path); p.Status != 200 || !strings.Contains(p.Body, "ann@example.com") || !strings.Contains(p.Body, `<label for="password_again">`) {
			t.Fatalf("the reset page: %d %s", p.Status, p.Body)
		}
	}
	dev := b.Get("/dev/mail")
	if dev.Status != 200 || !strings.Contains(dev.Body, "Reset your apprun password") || !strings.Contains(dev.Body, `<a href="`+strings.ReplaceAll(link, "&", "&amp;")+`">`) {
		t.Fatalf("/dev/mail: %d %s", dev.Status, dev.Body)
	}
	for _, c := range []struct {
		name, pw, again, says string
		status                int
	}{
		{"passwords that differ", "a brand new password", "a brand new passwore", "differ", 422},
		{"a short password", "short", "short", "password", 422},
	} {
		p := b.Post("/password/reset", url.Values{"token": {token}, "password": {c.pw}, "password_again": {c.again}})
		if p.Status != c.status || !strings.Contains(p.Body, c.says) || !strings.Contains(p.Body, `name="token" value="`+token+`"`) {
			t.Fatalf("%s: %d, want %d saying %q with the form again: %s", c.name, p.Status, c.status, c.says, p.Body)
		}
	}
	done := b.Post("/password/reset", url.Values{"token": {token}, "password": {"a brand new password"}, "password_again": {"a brand new password"}})
	if done.Status != http.StatusSeeOther || done.Location != "/password/changed" {
		t.Fatalf("the reset: %d %s %s", done.Status, done.Location, done.Body)
	}
	if p := b.Get("/password/changed"); p.Status != 200 || !strings.Contains(p.Body, "Your password is changed") || !strings.Contains(p.Body, "ann@example.com") {
		t.Fatalf("after the reset: %d %s", p.Status, p.Body)
	}
	if p := before.Get("/runs"); p.Status != http.StatusSeeOther {
		t.Fatalf("a browser signed in before the reset still is: %d", p.Status)
	}
	if p := h.Browser(t).Post("/signin", url.Values{"email": {"ann@example.com"}, "password": {WebPassword}}); p.Status != 401 {
		t.Fatalf("the old password: %d, want 401", p.Status)
	}
	if p := h.Browser(t).Post("/signin", url.Values{"email": {"ann@example.com"}, "password": {"a brand new password"}}); p.Status != http.StatusSeeOther {
		t.Fatalf("the new password: %d, want a sign-in", p.Status)
	}
	for _, p := range []Page{b.Get(path), b.Post("/password/reset", url.Values{"token": {token}, "password": {"a third password!"}, "password_again": {"a third password!"}})} {
		if p.Status != http.StatusGone || !strings.Contains(p.Body, "expired or was already used") || !strings.Contains(p.Body, `href="/password/forgot"`) {
			t.Fatalf("the used link: %d %s", p.Status, p.Body)
		}
		customerWords(t, "the used link's page", p)
	}
}

// Of several posts of one link at once, exactly one sets the password.
func TestAResetLinkWorksOnceUnderConcurrentPosts(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits), WithDevMail())
	h.Browser(t).SignUp("bob@example.com")
	askReset(t, h.Browser(t), "bob@example.com")
	token := strings.TrimPrefix(pathOf(t, h, ResetLink(t, h.WaitMail("bob@example.com", 1)[0].Text)), "/password/reset?token=")
	const posts = 4
	statuses := make([]int, posts)
	passwords := make([]string, posts)
	browsers := make([]*Browser, posts)
	for i := range posts {
		browsers[i], passwords[i] = h.Browser(t), "password number "+string(rune('a'+i))+" of four"
	}
	var wg sync.WaitGroup
	for i := range posts {
		wg.Go(func() {
			resp, err := browsers[i].Client.PostForm(h.Srv.URL+"/password/reset",
				url.Values{"token": {token}, "password": {passwords[i]}, "password_again": {passwords[i]}})
			if err == nil {
				statuses[i] = resp.StatusCode
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	won := -1
	for i, st := range statuses {
		switch {
		case st == http.StatusSeeOther && won < 0:
			won = i
		case st != http.StatusGone:
			t.Fatalf("posts answered %v: want one 303 and the rest 410", statuses)
		}
	}
	if won < 0 {
		t.Fatalf("posts answered %v: none set the password", statuses)
	}
	for i, pw := range passwords {
		p := h.Browser(t).Post("/signin", url.Values{"email": {"bob@example.com"}, "password": {pw}})
		if (i == won) != (p.Status == http.StatusSeeOther) {
			t.Fatalf("signing in with post %d's password: %d (the winner was %d)", i, p.Status, won)
		}
	}
}

// A link past its 30 minutes is refused, asked for or posted, and the
// password stays.
func TestAnExpiredResetLinkIsRefused(t *testing.T) {
	t.Parallel()
	var ahead atomic.Int64
	h := Start(t, WithLimits(NoLimits), WithDevMail(), WithSiteClock(func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }))
	b := h.Browser(t)
	b.SignUp("cy@example.com")
	askReset(t, b, "cy@example.com")
	path := pathOf(t, h, ResetLink(t, h.WaitMail("cy@example.com", 1)[0].Text))
	ahead.Store(int64(29 * time.Minute))
	if p := b.Get(path); p.Status != 200 {
		t.Fatalf("the link at 29 minutes: %d", p.Status)
	}
	ahead.Store(int64(31 * time.Minute))
	if p := b.Get(path); p.Status != http.StatusGone || !strings.Contains(p.Body, "Ask for a new link") {
		t.Fatalf("the link at 31 minutes: %d %s", p.Status, p.Body)
	}
	token := strings.TrimPrefix(path, "/password/reset?token=")
	if p := b.Post("/password/reset", url.Values{"token": {token}, "password": {"too late a password"}, "password_again": {"too late a password"}}); p.Status != http.StatusGone {
		t.Fatalf("posting the expired link: %d %s", p.Status, p.Body)
	}
	if p := h.Browser(t).Post("/signin", url.Values{"email": {"cy@example.com"}, "password": {WebPassword}}); p.Status != http.StatusSeeOther {
		t.Fatalf("the password changed through an expired link: sign-in %d", p.Status)
	}
}

// An address without an account is answered exactly as one with, and
// gets no mail. The mail goes out in the order asked, so once the known
// address's mail is there, the unknown one's request was done.
func TestAnUnknownAddressGetsTheSameAnswerAndNoMail(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits), WithDevMail())
	h.Browser(t).SignUp("dee@example.com")
	unknown := askReset(t, h.Browser(t), "nobody@example.com")
	known := askReset(t, h.Browser(t), "dee@example.com")
	if unknown.Body != known.Body {
		t.Fatalf("the answers differ:\n%s\n%s", unknown.Body, known.Body)
	}
	h.WaitMail("dee@example.com", 1)
	if all := h.Node.Outbox().Sent(); len(all) != 1 {
		t.Fatalf("the node mailed %d times, want once (to the known address): %+v", len(all), all)
	}
	if p := h.Browser(t).Post("/password/forgot", url.Values{"email": {"not an address"}}); p.Status != 422 || !strings.Contains(p.Body, "like name@example.com") {
		t.Fatalf("not an address: %d %s", p.Status, p.Body)
	}
}

// Requests for links are throttled per address (3, then one every 100
// seconds) and per client address (10, then one every 30 seconds), and
// the throttle says so in words.
func TestResetRequestsAreThrottledPerAddressAndPerClient(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits), WithDevMail())
	b := h.Browser(t)
	for range 3 {
		askReset(t, b, "eve@example.com")
	}
	p := b.Post("/password/forgot", url.Values{"email": {"eve@example.com"}})
	if p.Status != http.StatusTooManyRequests || !strings.Contains(p.Body, "Too many reset links") {
		t.Fatalf("a fourth link for one address: %d, want 429", p.Status)
	}
	customerWords(t, "the throttled page", p)
	// The address's budget is the address's, from any client.
	elsewhere := h.BrowserFrom(t, "127.0.0.31")
	if p := elsewhere.Post("/password/forgot", url.Values{"email": {"eve@example.com"}}); p.Status != http.StatusTooManyRequests {
		t.Fatalf("a fourth link for one address from another client: %d, want 429", p.Status)
	}
	// The same client, other addresses: its own budget, 10 in all.
	for i := range 7 {
		askReset(t, b, "other"+string(rune('a'+i))+"@example.com")
	}
	if p := b.Post("/password/forgot", url.Values{"email": {"eleventh@example.com"}}); p.Status != http.StatusTooManyRequests {
		t.Fatalf("an eleventh link from one client: %d, want 429", p.Status)
	}
	askReset(t, elsewhere, "eleventh@example.com") // another client's budget is its own
}

// Without SMTP and outside dev mode, the forgot page says plainly that
// reset by email is not set up, with no form and no operator's words,
// and there is no /dev/mail.
func TestWithoutMailTheForgotPageSaysResetIsNotSetUp(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits))
	b := h.Browser(t)
	p := b.Get("/password/forgot")
	if p.Status != 200 || !strings.Contains(p.Body, "Password reset by email is not set up on this service") || strings.Contains(p.Body, "<form method=\"post\" action=\"/password/forgot\"") {
		t.Fatalf("the forgot page without mail: %d %s", p.Status, p.Body)
	}
	customerWords(t, "the forgot page without mail", p)
	if p := b.Post("/password/forgot", url.Values{"email": {"a@example.com"}}); p.Status != http.StatusServiceUnavailable || !strings.Contains(p.Body, "not set up") {
		t.Fatalf("asking for a link without mail: %d %s", p.Status, p.Body)
	}
	if p := b.Get("/dev/mail"); p.Status != 404 {
		t.Fatalf("/dev/mail outside dev mode: %d", p.Status)
	}
}

// Through a real mail server: the node sends the link over SMTP into
// mailpit, the link names the site by its public URL, and following it
// from the mail sets the password.
func TestResetLinkThroughARealMailServer(t *testing.T) {
	t.Parallel()
	catcher := mailpit.Start(t)
	h := Start(t, WithLimits(NoLimits), WithSMTP(catcher.SMTPURL()))
	h.Browser(t).SignUp("fay@example.com")
	b := h.Browser(t)
	askReset(t, b, "fay@example.com")
	m := catcher.Latest(t, "fay@example.com")
	link := ResetLink(t, m.Text)
	if m.Subject != "Reset your apprun password" || !strings.Contains(m.HTML, link) {
		t.Fatalf("the mail mailpit received: %+v", m)
	}
	path := pathOf(t, h, link)
	if p := b.Get(path); p.Status != 200 {
		t.Fatalf("the link from the mail: %d %s", p.Status, p.Body)
	}
	token := strings.TrimPrefix(path, "/password/reset?token=")
	if p := b.Post("/password/reset", url.Values{"token": {token}, "password": {"mailed new password"}, "password_again": {"mailed new password"}}); p.Status != http.StatusSeeOther {
		t.Fatalf("the reset: %d %s", p.Status, p.Body)
	}
	if p := h.Browser(t).Post("/signin", url.Values{"email": {"fay@example.com"}, "password": {"mailed new password"}}); p.Status != http.StatusSeeOther {
		t.Fatalf("the new password: %d", p.Status)
	}
	if p := b.Get("/dev/mail"); p.Status != 404 {
		t.Fatalf("/dev/mail with SMTP: %d", p.Status)
	}
}

// The reset forms are read before their sender is known (the link, or
// an address, is the form), within the forms' budget as sign-in is;
// their pages are not bodies to read.
func TestResetFormsAreReadWithinTheFormsBudget(t *testing.T) {
	t.Parallel()
	forms := edge.NewBudget(edge.BudgetLimits{})
	of := web.ReadsUnknown(forms)
	for _, c := range []struct {
		method, path string
		want         bool
	}{
		{"POST", "/password/forgot", true}, {"POST", "/password/reset", true}, {"POST", "/signin", true},
		{"GET", "/password/forgot", false}, {"GET", "/password/reset", false}, {"POST", "/password/changed", false},
	} {
		if got := of(httptest.NewRequest(c.method, c.path, nil)) == forms; got != c.want {
			t.Errorf("%s %s read within the forms' budget: %v, want %v", c.method, c.path, got, c.want)
		}
	}
}
