package mailer

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/apprun/apprun/internal/mailpit"
	"github.com/apprun/apprun/port"
)

// Under StartTLS (smtp:// to a host on a network) a server that does not
// offer STARTTLS gets no mail: nothing goes out in plain text. The same
// server on loopback (StartTLSIfOffered) gets it.
func TestStartTLSRequiredRefusesAServerWithoutIt(t *testing.T) {
	t.Parallel()
	catcher := mailpit.Start(t) // offers no STARTTLS
	u, _ := url.Parse(catcher.SMTPURL())
	p, _ := strconv.Atoi(u.Port())
	mail := port.Mail{To: "b@example.com", Subject: "s", Text: "t"}
	required := &SMTP{server: Server{Host: u.Hostname(), Port: p, TLS: StartTLS}, from: "a@example.com", timeout: sendTimeout}
	if err := required.Send(context.Background(), mail); err == nil || !strings.Contains(strings.ToLower(err.Error()), "starttls") {
		t.Fatalf("STARTTLS required, to a server without it: %v, want a refusal", err)
	}
	if got := catcher.Messages(t); len(got) != 0 {
		t.Fatalf("the server received %d mails in plain text", len(got))
	}
	required.server.TLS = StartTLSIfOffered
	if err := required.Send(context.Background(), mail); err != nil {
		t.Fatal(err)
	}
	catcher.Latest(t, "b@example.com")
}
