package engine

import (
	"strings"
	"time"
	"unicode/utf8"
)

// A login is an email and password that sign in to one account (the
// website). Its subject is the SHA-256 of the normalised email, so the
// first sign-up of an email wins everywhere (a compare-and-set on "no
// message yet") and sign-in reads it directly, with no read model.

// LoginEvent is one entry of a login's log.
type LoginEvent struct {
	Type      string    `json:"type"` // "login_created"
	V         int       `json:"v"`
	At        time.Time `json:"at"`
	AccountID string    `json:"account_id"`
	Email     string    `json:"email"`
	// Hash is the bcrypt hash of the password.
	Hash string `json:"hash"`
}

// Password rules.
const (
	MinPassword = 10
	MaxPassword = 72 // bcrypt reads no further
)

// NormalEmail checks and normalises an email address for a login.
func NormalEmail(email string) (string, error) {
	if !utf8.ValidString(email) { // strings.ToLower would make U+FFFD of it
		return "", Errorf(CodeInvalidInput, "email: must be an email address")
	}
	email = strings.ToLower(strings.TrimSpace(email))
	at := strings.LastIndexByte(email, '@')
	if len(email) > 254 || at < 1 || at == len(email)-1 || strings.ContainsAny(email, " \t\r\n<>") {
		return "", Errorf(CodeInvalidInput, "email: must be an email address")
	}
	return email, nil
}
