package mailer_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/internal/mailpit"
	"github.com/apprun/apprun/mailer"
	"github.com/apprun/apprun/port"
)

// The scheme decides the TLS policy and the default port: smtps:// is
// TLS from the first byte, smtp:// requires STARTTLS, but to a loopback
// host (a relay or catcher on the same machine) where STARTTLS is used
// when offered. A URL the mailer could not use is refused, and the
// refusal never repeats the password.
func TestTheURLDecidesTLSPortAndCredentials(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		url  string
		want mailer.Server
	}{
		{"smtp://mail.example.com", mailer.Server{Host: "mail.example.com", Port: 587, TLS: mailer.StartTLS}},
		{"smtp://u%40x:p%3Ass@mail.example.com:2525", mailer.Server{Host: "mail.example.com", Port: 2525, TLS: mailer.StartTLS, User: "u@x", Password: "p:ss"}},
		{"smtps://u:p@mail.example.com", mailer.Server{Host: "mail.example.com", Port: 465, TLS: mailer.Implicit, User: "u", Password: "p"}},
		{"smtp://127.0.0.1:1025", mailer.Server{Host: "127.0.0.1", Port: 1025, TLS: mailer.StartTLSIfOffered}},
		{"smtp://localhost", mailer.Server{Host: "localhost", Port: 587, TLS: mailer.StartTLSIfOffered}},
		{"smtp://[::1]:25", mailer.Server{Host: "::1", Port: 25, TLS: mailer.StartTLSIfOffered}},
		{"smtps://127.0.0.1", mailer.Server{Host: "127.0.0.1", Port: 465, TLS: mailer.Implicit}},
	} {
		got, err := mailer.ParseURL(c.url)
		if err != nil || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.url, got, err, c.want)
		}
	}
	for _, c := range []struct{ url, says string }{
		{"http://mail.example.com", "scheme"},
		{"mail.example.com:587", "scheme"},
		{"smtp://", "no host"},
		{"smtp://mail.example.com:0", "port"},
		{"smtp://mail.example.com:99999", "port"},
		{"smtp://mail.example.com/inbox", "no path"},
		{"smtp://mail.example.com?tls=off", "no path or parameters"},
		{"smtp://user@mail.example.com", "both a user and a password"},
		{"smtp://:s3cret-pass@mail.example.com", "both a user and a password"},
		{"smtp://u:s3cret-pass@mail example.com", "not a URL"},
	} {
		_, err := mailer.ParseURL(c.url)
		if err == nil || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), "s3cret-pass") {
			t.Errorf("%s: %v, want an error saying %q (and not the password)", c.url, err, c.says)
		}
	}
	if _, err := mailer.ParseFrom("not an address"); err == nil {
		t.Error("a sender that is not an address was taken")
	}
	if got, err := mailer.ParseFrom("apprun <no-reply@example.com>"); err != nil || got != `"apprun" <no-reply@example.com>` {
		t.Errorf("sender: %q, %v", got, err)
	}
}

// A mail sent through SMTP arrives in a real catcher (mailpit) as its
// sender, recipient, subject, text and HTML.
func TestSMTPDeliversTextAndHTMLToARealServer(t *testing.T) {
	t.Parallel()
	catcher := mailpit.Start(t)
	m, err := mailer.NewSMTP(catcher.SMTPURL(), "apprun <no-reply@example.com>")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Send(ctx, port.Mail{To: "ann@example.com", Subject: "Réinitialiser — reset",
		Text: "Open http://example.com/x?token=abc", HTML: `<p><a href="http://example.com/x?token=abc">Reset</a></p>`}); err != nil {
		t.Fatal(err)
	}
	got := catcher.Latest(t, "ann@example.com")
	if got.From != "no-reply@example.com" || got.Subject != "Réinitialiser — reset" ||
		!strings.Contains(got.Text, "http://example.com/x?token=abc") || !strings.Contains(got.HTML, `href="http://example.com/x?token=abc"`) {
		t.Fatalf("received %+v", got)
	}
}

// A server that refuses the connection is an error, never a mail lost
// in silence.
func TestSMTPReportsAServerThatIsNotThere(t *testing.T) {
	t.Parallel()
	m, err := mailer.NewSMTP("smtp://127.0.0.1:1", "no-reply@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Send(context.Background(), port.Mail{To: "a@example.com", Subject: "s", Text: "t"}); err == nil {
		t.Fatal("a send to a closed port succeeded")
	}
}

// The dev outbox keeps the newest mails, newest first, up to its bound.
func TestTheOutboxKeepsTheNewestUpToItsBound(t *testing.T) {
	t.Parallel()
	o := mailer.NewOutbox(3, "dev <dev@localhost>", nil)
	for _, to := range []string{"a@x", "b@x", "c@x", "d@x", "e@x"} {
		if err := o.Send(context.Background(), port.Mail{To: to, Subject: "s"}); err != nil {
			t.Fatal(err)
		}
	}
	sent := o.Sent()
	if len(sent) != 3 || sent[0].To != "e@x" || sent[2].To != "c@x" || sent[0].From != "dev <dev@localhost>" || sent[0].At.IsZero() {
		t.Fatalf("kept %+v, want e, d, c", sent)
	}
	def := mailer.NewOutbox(0, "", nil)
	for range mailer.DefaultKeep + 10 {
		_ = def.Send(context.Background(), port.Mail{To: "a@x"})
	}
	if n := len(def.Sent()); n != mailer.DefaultKeep {
		t.Fatalf("an outbox of the default bound keeps %d, want %d", n, mailer.DefaultKeep)
	}
}
