package mailer

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/apprun/apprun/port"
)

// Outbox keeps the mail "sent" in dev mode, in memory: the newest Keep,
// for the website's /dev/mail page. Nothing leaves the process.
type Outbox struct {
	mu   sync.Mutex
	keep int
	from string
	now  func() time.Time
	sent []port.SentMail // oldest first
}

// DefaultKeep is how many mails an Outbox keeps by default.
const DefaultKeep = 50

// NewOutbox keeps the newest keep mails (DefaultKeep when keep < 1),
// each stamped with from and the time now tells.
func NewOutbox(keep int, from string, now func() time.Time) *Outbox {
	if keep < 1 {
		keep = DefaultKeep
	}
	if now == nil {
		now = time.Now
	}
	return &Outbox{keep: keep, from: from, now: now}
}

// Send implements port.Mailer: it keeps m, dropping the oldest mail past
// the bound.
func (o *Outbox) Send(_ context.Context, m port.Mail) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sent = append(o.sent, port.SentMail{Mail: m, From: o.from, At: o.now()})
	if over := len(o.sent) - o.keep; over > 0 {
		o.sent = slices.Delete(o.sent, 0, over)
	}
	return nil
}

// Sent is the kept mail, newest first.
func (o *Outbox) Sent() []port.SentMail {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := slices.Clone(o.sent)
	slices.Reverse(out)
	return out
}
