package nodetest

import (
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/node"
	"github.com/apprun/apprun/port"
)

// WithDevMail runs the node in dev mode's mail: without SMTP, what it
// mails is kept in its outbox (Harness.Mail reads it) and shown at
// /dev/mail.
func WithDevMail() Option { return func(c *node.Config) { c.Dev = true } }

// WithSMTP sends the node's mail through the SMTP server at url (a
// mailpit's SMTPURL), from a test sender. The links in mail name the
// harness's own server (APPRUN_PUBLIC_URL, which SMTP needs): so a test
// follows them as a user would.
func WithSMTP(url string) Option {
	return func(c *node.Config) { c.SMTPURL, c.SMTPFrom = url, "apprun test <no-reply@example.com>" }
}

// WithSiteClock gives the website the clock now (tests move it past a
// reset link's lifetime).
func WithSiteClock(now func() time.Time) Option { return func(c *node.Config) { c.SiteClock = now } }

// siteListener is, for a node that sends mail through SMTP without a
// public URL of its own, the listener the harness's server will serve
// on, taken before the node starts so that the node's public URL is its
// address (nil otherwise).
func (h *Harness) siteListener() net.Listener {
	h.T.Helper()
	if h.Cfg.SMTPURL == "" || (h.Cfg.PublicURL != "" && !h.sitePublic) {
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		h.T.Fatal(err)
	}
	h.Cfg.PublicURL, h.sitePublic = "http://"+ln.Addr().String(), true
	return ln
}

// Mail is what the node has mailed to the address to, newest first
// (dev mode's outbox: WithDevMail).
func (h *Harness) Mail(to string) []port.SentMail {
	h.T.Helper()
	o := h.Node.Outbox()
	if o == nil {
		h.T.Fatal("the node keeps no outbox: start it WithDevMail()")
	}
	var out []port.SentMail
	for _, m := range o.Sent() {
		if strings.EqualFold(m.To, to) {
			out = append(out, m)
		}
	}
	return out
}

// WaitMail waits (up to 20s) for the node to have mailed to the address
// n mails, and returns them, newest first.
func (h *Harness) WaitMail(to string, n int) []port.SentMail {
	h.T.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := h.Mail(to)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			h.T.Fatalf("%d mails to %s within 20s, want %d", len(got), to, n)
		}
		time.Sleep(10 * time.Millisecond) // mail goes out off the request: poll it
	}
}

// resetLink finds a password reset link in a text.
var resetLink = regexp.MustCompile(`https?://\S+/password/reset\?token=[A-Za-z0-9_-]+`)

// ResetLink is the password reset link a mail's text holds; the test
// fails when it holds none.
func ResetLink(t testing.TB, text string) string {
	t.Helper()
	link := resetLink.FindString(text)
	if link == "" {
		t.Fatalf("no reset link in the mail:\n%s", text)
	}
	return link
}
