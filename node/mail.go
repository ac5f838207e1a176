package node

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/apprun/apprun/eventlog"
	"github.com/apprun/apprun/mailer"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/web"
	"github.com/nats-io/nats.go/jetstream"
)

// The website's mail (password reset links): through SMTP when
// APPRUN_SMTP_URL is set; else, in dev mode, into an outbox in memory
// shown at /dev/mail; else none, and the site says reset by email is not
// set up.

// checkMail refuses mail settings the node could not send with, naming
// the variable. Links in mail name the site by APPRUN_PUBLIC_URL: built
// from a request's Host header, a request for someone else's link with a
// forged Host would mail them a link to another site.
func (c Config) checkMail() error {
	if c.SMTPURL == "" {
		if c.SMTPFrom != "" {
			return errors.New("config: APPRUN_SMTP_FROM is set but APPRUN_SMTP_URL is not: set the mail server too, or neither")
		}
		return nil
	}
	if _, err := mailer.ParseURL(c.SMTPURL); err != nil {
		return fmt.Errorf("config: APPRUN_SMTP_URL: %v", err)
	}
	if c.SMTPFrom == "" {
		return errors.New("config: APPRUN_SMTP_URL needs APPRUN_SMTP_FROM, the sender address of the mail (no-reply@example.com)")
	}
	if _, err := mailer.ParseFrom(c.SMTPFrom); err != nil {
		return fmt.Errorf("config: APPRUN_SMTP_FROM: %v", err)
	}
	u, err := url.Parse(c.PublicURL)
	switch {
	case c.PublicURL == "":
		return errors.New("config: APPRUN_SMTP_URL needs APPRUN_PUBLIC_URL, the site's address as its users reach it (https://apprun.example.com): the links in mail name the site by it")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("config: APPRUN_PUBLIC_URL %q: want the site's origin, like https://apprun.example.com", c.PublicURL)
	}
	return nil
}

// devMailFrom is the sender the dev outbox stamps on its mail.
const devMailFrom = "apprun (dev mode) <no-reply@localhost>"

// mail is the node's mailer and, in dev mode without SMTP, the outbox
// it is (nil else).
func (c Config) mail() (port.Mailer, *mailer.Outbox, error) {
	switch {
	case c.SMTPURL != "":
		m, err := mailer.NewSMTP(c.SMTPURL, c.SMTPFrom)
		return m, nil, err
	case c.Dev:
		o := mailer.NewOutbox(mailer.DefaultKeep, devMailFrom, nil)
		return o, o, nil
	}
	return nil, nil, nil
}

// resetBucket creates (or opens) the reset links' bucket, as the sessions
// bucket is.
func (n *Node) resetBucket(ctx context.Context, js jetstream.JetStream) (jetstream.KeyValue, error) {
	var kv jetstream.KeyValue
	err := port.Retry(ctx, n.cfg.Logger, "create the reset links bucket", func(ctx context.Context) (err error) {
		kv, err = eventlog.Ensure(ctx, func(ctx context.Context) (jetstream.KeyValue, error) {
			return web.ResetBucket(ctx, js, n.cfg.Replicas)
		}, func(ctx context.Context) (jetstream.KeyValue, bool) {
			kv, err := js.KeyValue(ctx, web.ResetBucketName)
			if err != nil {
				return nil, false
			}
			st, err := kv.Status(ctx)
			return kv, err == nil && st.TTL() == web.ResetTTL
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reset links: %w", err)
	}
	return kv, nil
}

// siteMail is the website's part of the mail settings.
func (n *Node) siteMail(ctx context.Context, js jetstream.JetStream, cfg *web.Config) error {
	m, outbox, err := n.cfg.mail()
	if err != nil {
		return err
	}
	if cfg.ResetTokens, err = n.resetBucket(ctx, js); err != nil {
		return err
	}
	cfg.Mailer, cfg.PublicURL, n.outbox = m, n.cfg.PublicURL, outbox
	if outbox != nil {
		cfg.DevMail = outbox
	}
	return nil
}

// Outbox is dev mode's outbox of mail, or nil (not dev mode, or SMTP).
func (n *Node) Outbox() *mailer.Outbox { return n.outbox }
