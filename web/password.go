package web

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/httpapi"
	"github.com/apprun/apprun/service"
)

// Password reset by email (docs/website.md): /password/forgot asks for
// the address and always answers the same; the mail's link opens
// /password/reset, which sets the new password once, signs out every
// other browser of the account and signs this one in.

// passwordReset is the site's part of the reset: the links' tokens and
// the queue the mail goes out on.
type passwordReset struct {
	tokens *resetTokens
	queue  mailQueue
}

// Throttle budgets of the requests for a link (throttle.go: a budget of
// n regains one try every 5 minutes / n): per address, so that no one
// fills a mailbox with links, and per client address.
const (
	resetPerEmail = 3
	resetPerIP    = 10
)

// resetReady says whether the site can send reset links.
func (s *Site) resetReady() bool { return s.cfg.Mailer != nil && s.reset.tokens != nil }

// linkBase is the origin of the links in mail: PublicURL when the
// operator set it, else the request's.
func (s *Site) linkBase(r *http.Request) string {
	if s.cfg.PublicURL != "" {
		return strings.TrimSuffix(s.cfg.PublicURL, "/")
	}
	return origin(r)
}

type forgotForm struct {
	Ready bool
	Email string
}

// forgotPage is GET /password/forgot: the form, or, where no mail can be
// sent, a plain word that reset by email is not set up.
func (s *Site) forgotPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "password_forgot", "Reset your password", forgotForm{Ready: s.resetReady()})
}

// forgot is POST /password/forgot. Whatever the address, known or not,
// the answer is the same redirect, given before the address is looked
// up: the link is made and mailed off the request (resetmail.go).
func (s *Site) forgot(w http.ResponseWriter, r *http.Request) {
	data := forgotForm{Ready: s.resetReady(), Email: r.PostFormValue("email")}
	if !data.Ready {
		s.render(w, r, http.StatusServiceUnavailable, "password_forgot", "Reset your password", data)
		return
	}
	email, err := service.NormalEmail(data.Email)
	if err != nil {
		s.render(w, r, http.StatusUnprocessableEntity, "password_forgot", "Reset your password", data,
			"Enter the email address you signed up with, like name@example.com.")
		return
	}
	if !s.throttle.reserve(budget{"reset:" + email, resetPerEmail}, budget{"reset-ip:" + clientIP(r), resetPerIP}) {
		s.render(w, r, http.StatusTooManyRequests, "password_forgot", "Reset your password", data,
			"Too many reset links were asked for. Wait a few minutes, then try again.")
		return
	}
	base := s.linkBase(r)
	if !s.reset.queue.add(func() { s.sendResetLink(email, base) }) {
		s.cfg.Logger.Warn("password reset: the mail queue is full; a request was dropped")
	}
	http.Redirect(w, r, "/password/sent", http.StatusSeeOther)
}

// sentPage is GET /password/sent: what a request for a link is answered.
func (s *Site) sentPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "password_sent", "Check your email", map[string]any{"Minutes": int(ResetTTL / time.Minute)})
}

type resetForm struct {
	Token, Email string
	MinPassword  int
}

// resetPage is GET /password/reset?token=: the form for the new
// password. It does not use the link up: mail scanners open links.
func (s *Site) resetPage(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("token")
	l, _, err := s.peekLink(r, token)
	if err != nil {
		s.linkFailed(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "password_reset", "Choose a new password",
		resetForm{Token: token, Email: l.Ticket.Email, MinPassword: service.MinPassword})
}

// setPassword is POST /password/reset: it checks the link and the password,
// uses the link up (once, whatever the concurrency: resettoken.go), sets
// the password, signs the account's other browsers out and this one in.
func (s *Site) setPassword(w http.ResponseWriter, r *http.Request) {
	token, password := r.PostFormValue("token"), r.PostFormValue("password")
	l, rev, err := s.peekLink(r, token)
	if err != nil {
		s.linkFailed(w, r, err)
		return
	}
	form := resetForm{Token: token, Email: l.Ticket.Email, MinPassword: service.MinPassword}
	if password != r.PostFormValue("password_again") {
		s.render(w, r, http.StatusUnprocessableEntity, "password_reset", "Choose a new password", form, "The two passwords differ.")
		return
	}
	var e *engine.Error
	if err := service.CheckPassword(password); errors.As(err, &e) {
		s.render(w, r, httpapi.StatusOf(e.Code), "password_reset", "Choose a new password", form, accountWords(e))
		return
	}
	// The link is used up only once a hashing place is held: a busy
	// node leaves it working for the next try.
	err = s.hashing(r.Context(), func() error {
		if err := s.reset.tokens.consume(r.Context(), token, rev); err != nil {
			return err
		}
		_, err := s.cfg.Engine.ResetPassword(r.Context(), l.Ticket, password)
		return err
	})
	switch {
	case errors.Is(err, errHashBusy):
		s.render(w, r, http.StatusServiceUnavailable, "password_reset", "Choose a new password", form,
			"Too many password changes at this moment. Try again in a few seconds.")
		return
	case errors.Is(err, errLinkGone), errors.Is(err, service.ErrResetStale):
		s.linkFailed(w, r, errLinkGone)
		return
	case err != nil:
		s.fail(w, r, err)
		return
	}
	if err := s.sessions.endAccount(r.Context(), l.Ticket.AccountID); err != nil {
		s.cfg.Logger.Error("password reset: signing out the account's sessions", "account", l.Ticket.AccountID, "err", err)
	}
	if err := s.sessions.start(r.Context(), w, r, s.cfg.SecureCookies, l.Ticket.AccountID, l.Ticket.Email); err != nil {
		s.cfg.Logger.Error("password reset: signing in", "err", err)
		http.Redirect(w, r, "/signin", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/password/changed", http.StatusSeeOther)
}

// changedPage is GET /password/changed, where a reset lands.
func (s *Site) changedPage(w http.ResponseWriter, r *http.Request, _ viewer) {
	s.render(w, r, http.StatusOK, "password_changed", "Password changed", nil)
}

// peekLink reads a reset link, unless reset links are not set up here.
func (s *Site) peekLink(r *http.Request, token string) (resetLink, uint64, error) {
	if s.reset.tokens == nil {
		return resetLink{}, 0, errLinkGone
	}
	return s.reset.tokens.peek(r.Context(), token)
}

// linkFailed answers a link that is unknown, expired or used with a page
// that offers a new one, and a failure to read it as one.
func (s *Site) linkFailed(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, errLinkGone) {
		s.render(w, r, http.StatusGone, "password_gone", "This link does not work", map[string]any{"Minutes": int(ResetTTL / time.Minute)})
		return
	}
	s.cfg.Logger.Error("password reset: reading a link", "err", err)
	s.problem(w, r, http.StatusServiceUnavailable, "Reset links cannot be checked at this moment. Try again shortly.")
}
