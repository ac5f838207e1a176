package web

import (
	"bytes"
	"context"
	"errors"
	"html/template"
	"strconv"
	"sync"
	"time"

	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service"
)

// A request for a reset link is answered before anything about the
// address is looked up: the lookup, the token and the mail happen off
// the request, in mailQueue. So an address with an account and one
// without get the same answer in the same time.

// mailQueue runs jobs one at a time, in the order they came, on a
// goroutine that exists only while jobs wait. At most mailQueueMax wait:
// past that a request's job is dropped (and logged); the throttle keeps
// a sender far below it.
type mailQueue struct {
	mu      sync.Mutex
	jobs    []func()
	running bool
}

const (
	mailQueueMax = 256
	// mailJobTimeout bounds one job: the lookup, the token and the send.
	mailJobTimeout = time.Minute
)

// add queues job, or says it could not.
func (q *mailQueue) add(job func()) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.jobs) >= mailQueueMax {
		return false
	}
	q.jobs = append(q.jobs, job)
	if !q.running {
		q.running = true
		go q.run()
	}
	return true
}

func (q *mailQueue) run() {
	for {
		q.mu.Lock()
		if len(q.jobs) == 0 {
			q.running = false
			q.mu.Unlock()
			return
		}
		job := q.jobs[0]
		q.jobs = q.jobs[1:]
		q.mu.Unlock()
		job()
	}
}

// sendResetLink makes a link for email's login and mails it; an email
// without a login gets nothing, and the asker learns nothing of it.
func (s *Site) sendResetLink(email, base string) {
	ctx, cancel := context.WithTimeout(context.Background(), mailJobTimeout)
	defer cancel()
	ticket, err := s.cfg.Engine.PasswordResetTicket(ctx, email)
	if errors.Is(err, service.ErrNoLogin) {
		return
	}
	if err != nil {
		s.cfg.Logger.Error("password reset: reading the login", "err", err)
		return
	}
	token, err := s.reset.tokens.issue(ctx, ticket)
	if err != nil {
		s.cfg.Logger.Error("password reset: storing the link", "err", err)
		return
	}
	m, err := resetMail(ticket.Email, base+"/password/reset?token="+token)
	if err == nil {
		err = s.cfg.Mailer.Send(ctx, m)
	}
	if err != nil {
		s.cfg.Logger.Error("password reset: sending the link", "account", ticket.AccountID, "err", err)
	}
}

var resetMailHTML = template.Must(template.New("reset").Parse(`<!doctype html>
<html lang="en"><body style="font-family: sans-serif; line-height: 1.5">
<p>Someone, probably you, asked to reset the password of the apprun account for {{.Email}}.</p>
<p><a href="{{.Link}}">Choose a new password</a></p>
<p>The link works once, for {{.Minutes}} minutes. If you did not ask, ignore this mail: your password stays as it is.</p>
</body></html>`))

// resetMail is the mail that carries a reset link.
func resetMail(email, link string) (port.Mail, error) {
	data := map[string]any{"Email": email, "Link": link, "Minutes": int(ResetTTL / time.Minute)}
	var html bytes.Buffer
	if err := resetMailHTML.Execute(&html, data); err != nil {
		return port.Mail{}, err
	}
	text := "Someone, probably you, asked to reset the password of the apprun account for " + email + ".\n\n" +
		"Open this link to choose a new password:\n\n" + link + "\n\n" +
		"The link works once, for " + strconv.Itoa(int(ResetTTL/time.Minute)) + " minutes. If you did not ask, ignore this mail: your password stays as it is.\n"
	return port.Mail{To: email, Subject: "Reset your apprun password", Text: text, HTML: html.String()}, nil
}
