package port

import (
	"context"
	"time"
)

// Mailer sends one mail to one address, from the sender its
// implementation is configured with. An error means the mail was not
// accepted for delivery. Package mailer implements it over SMTP and, for
// dev mode, as an outbox kept in memory.
type Mailer interface {
	Send(ctx context.Context, m Mail) error
}

// Mail is one message: plain text, with an HTML alternative when HTML is
// not empty.
type Mail struct {
	To      string
	Subject string
	Text    string
	HTML    string
}

// SentMail is a mail as an outbox kept it.
type SentMail struct {
	Mail
	From string
	At   time.Time
}
