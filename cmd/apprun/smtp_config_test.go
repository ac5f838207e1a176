package main

import (
	"strings"
	"testing"
)

// The SMTP server and sender come from their variables or their flags;
// a password on the command line (which ps shows) is refused and told to
// go in the variable.
func TestSMTPSettingsAndWhereTheirPasswordMayBe(t *testing.T) {
	t.Setenv("APPRUN_SMTP_URL", "smtp://user:secret@mail.example.com:587")
	t.Setenv("APPRUN_SMTP_FROM", "no-reply@example.com")
	c, err := parseServe(nil)
	if err != nil || c.SMTPURL != "smtp://user:secret@mail.example.com:587" || c.SMTPFrom != "no-reply@example.com" {
		t.Fatalf("from the variables: %q %q %v", c.SMTPURL, c.SMTPFrom, err)
	}
	if c, err := parseServe([]string{"--smtp-url", "smtps://mail.example.com", "--smtp-from", "ops@example.com"}); err != nil ||
		c.SMTPURL != "smtps://mail.example.com" || c.SMTPFrom != "ops@example.com" {
		t.Fatalf("flags without a password: %q %q %v", c.SMTPURL, c.SMTPFrom, err)
	}
	_, err = parseServe([]string{"--smtp-url", "smtp://user:secret@mail.example.com"})
	if err == nil || !strings.Contains(err.Error(), "APPRUN_SMTP_URL") || strings.Contains(err.Error(), "secret") {
		t.Fatalf("a password in --smtp-url: %v, want a refusal naming APPRUN_SMTP_URL", err)
	}
}
