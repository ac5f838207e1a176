package engine

import (
	"time"
)

// A login is an email and password that sign in to one account (the
// website). Its subject is the SHA-256 of the normalised email, so the
// first sign-up of an email wins everywhere (a compare-and-set on "no
// message yet") and sign-in reads it directly, with no read model.

// The kinds of a login's events. A login's last event holds its current
// password hash, whichever kind it is.
const (
	// LoginCreated is a sign-up: the login's first event.
	LoginCreated = "login_created"
	// PasswordChanged is a new password set through a reset link.
	PasswordChanged = "password_changed"
)

// LoginEvent is one entry of a login's log.
type LoginEvent struct {
	Type      string    `json:"type"` // LoginCreated or PasswordChanged
	V         int       `json:"v"`
	At        time.Time `json:"at"`
	AccountID string    `json:"account_id"`
	Email     string    `json:"email"`
	// Hash is the bcrypt hash of the password.
	Hash string `json:"hash"`
}
