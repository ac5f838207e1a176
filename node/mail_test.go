package node_test

import (
	"strings"
	"testing"

	"github.com/apprun/apprun/node"
	"github.com/apprun/apprun/node/nodetest"
)

// Mail settings the node could not send with stop the start, naming the
// variable to fix, and never repeating the SMTP password.
func TestMailSettingsFailLoudly(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		url, from string
		public    string
		says      string
	}{
		{"a bad URL", "http://u:s3cret@mail.example.com", "no-reply@example.com", "https://apprun.example.com", "APPRUN_SMTP_URL"},
		{"a URL without a sender", "smtp://u:s3cret@mail.example.com", "", "https://apprun.example.com", "APPRUN_SMTP_FROM"},
		{"a sender that is no address", "smtp://u:s3cret@mail.example.com", "nobody", "https://apprun.example.com", "APPRUN_SMTP_FROM"},
		{"a sender without a URL", "", "no-reply@example.com", "", "APPRUN_SMTP_URL"},
		{"SMTP without the public URL", "smtps://u:s3cret@mail.example.com", "no-reply@example.com", "", "APPRUN_PUBLIC_URL"},
		{"SMTP with a public URL that is no origin", "smtps://u:s3cret@mail.example.com", "no-reply@example.com", "apprun.example.com/x", "APPRUN_PUBLIC_URL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := node.New(node.Config{DataDir: t.TempDir(), AdminToken: nodetest.AdminToken, SMTPURL: c.url, SMTPFrom: c.from, PublicURL: c.public})
			if err == nil || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("%v, want an error naming %s (without the password)", err, c.says)
			}
		})
	}
	if _, err := node.New(node.Config{DataDir: t.TempDir(), AdminToken: nodetest.AdminToken, SMTPURL: "smtps://u:p@mail.example.com",
		SMTPFrom: "apprun <no-reply@example.com>", PublicURL: "https://apprun.example.com"}); err != nil {
		t.Fatalf("whole mail settings: %v", err)
	}
}
