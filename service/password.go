package service

import (
	"context"
	"errors"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service/store"
	"golang.org/x/crypto/bcrypt"
)

// A password reset: the website makes a ResetTicket for an email's login,
// mails a link that stands for it, and sets the new password with it.
// The ticket holds the login's last sequence when it was made, and the
// new password is a compare-and-set on that sequence: once any password
// change lands on the login, every ticket made before it is stale. So a
// link works once, and asking twice leaves only the link used first
// working until then.

// ResetTicket is what a reset link stands for: a login as it was when
// the link was made.
type ResetTicket struct {
	AccountID string `json:"account_id"`
	Email     string `json:"email"`
	// LoginSeq is the sequence of the login's last event then.
	LoginSeq uint64 `json:"login_seq"`
}

// ErrNoLogin is an email no login uses.
var ErrNoLogin = errors.New("service: no login uses this email")

// ErrResetStale is a ticket whose login has changed since it was made:
// its link was used, or another was.
var ErrResetStale = errors.New("service: the login changed since the reset link was made")

// PasswordResetTicket is the ticket of email's login, or ErrNoLogin.
func (s *Service) PasswordResetTicket(ctx context.Context, email string) (ResetTicket, error) {
	email, err := normalEmail(email)
	if err != nil {
		return ResetTicket{}, err
	}
	var login engine.LoginEvent
	seq, err := s.log.Last(ctx, loginSubject(email), &login)
	if errors.Is(err, port.ErrNoMessage) {
		return ResetTicket{}, ErrNoLogin
	}
	if err != nil {
		return ResetTicket{}, internal("read login", err)
	}
	return ResetTicket{AccountID: login.AccountID, Email: login.Email, LoginSeq: seq}, nil
}

// ResetPassword sets password on t's login, if the login has not changed
// since t was made (ErrResetStale otherwise), with a password_changed
// event on the login's subject: sign-in reads the login's last event, so
// the old password stops working at once. It returns the event's sequence.
func (s *Service) ResetPassword(ctx context.Context, t ResetTicket, password string) (uint64, error) {
	if err := CheckPassword(password); err != nil {
		return 0, err
	}
	email, err := normalEmail(t.Email)
	if err != nil || t.AccountID == "" || t.LoginSeq == 0 {
		return 0, ErrResetStale
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), s.cfg.PasswordCost)
	if err != nil {
		return 0, internal("hash password", err)
	}
	ev := engine.LoginEvent{Type: engine.PasswordChanged, V: engine.EventVersion, At: s.now(), AccountID: t.AccountID, Email: email, Hash: string(hash)}
	seq, err := s.appendResolved(ctx, store.Entry{Subject: loginSubject(email), Value: ev, Expect: store.ExpectSeq(t.LoginSeq)})
	if errors.Is(err, port.ErrConflict) {
		return 0, ErrResetStale
	}
	if errors.Is(err, errUnresolved) {
		return 0, unresolved("the change of your password", "try signing in with the new one; if that fails, ask for a new link")
	}
	if err != nil {
		return 0, internal("reset password", err)
	}
	return seq, nil
}
