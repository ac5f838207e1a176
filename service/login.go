package service

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service/store"
	"github.com/apprun/apprun/subjects"
	"golang.org/x/crypto/bcrypt"
)

func loginSubject(email string) string {
	sum := sha256.Sum256([]byte(email))
	return subjects.LoginPrefix + hex.EncodeToString(sum[:16])
}

// SignUp opens an account with a welcome grant and a login for email, in
// one atomic write. An email that already has a login is email_taken.
func (s *Service) SignUp(ctx context.Context, email, password string, credits int64) (string, uint64, error) {
	email, err := normalEmail(email)
	if err != nil {
		return "", 0, err
	}
	if err := CheckPassword(password); err != nil {
		return "", 0, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), s.cfg.PasswordCost)
	if err != nil {
		return "", 0, internal("hash password", err)
	}
	id := s.id(engine.PrefixAccount, 10)
	open, err := ledger.Open(id, email, credits, s.now(), ledger.By{Actor: "web:" + id, Reason: "signup"})
	if err != nil {
		return "", 0, engine.Errorf(engine.CodeInvalidInput, "credits: must be between 0 and %d", ledger.MaxGrant)
	}
	login := engine.LoginEvent{Type: engine.LoginCreated, V: engine.EventVersion, At: s.now(), AccountID: id, Email: email, Hash: string(hash)}
	seq, err := s.appendResolved(ctx,
		store.Entry{Subject: loginSubject(email), Value: login, Expect: store.ExpectSeq(0)},
		store.Entry{Subject: subjects.Account(id), Value: open, Expect: store.ExpectSeq(0)},
	)
	if errors.Is(err, port.ErrConflict) {
		return "", 0, engine.Errorf(engine.CodeEmailTaken, "an account with this email exists: sign in instead")
	}
	if errors.Is(err, errUnresolved) {
		return "", 0, unresolved("your account", "sign in with this email and password before signing up again")
	}
	if err != nil {
		return "", 0, internal("sign up", err)
	}
	return id, seq, nil
}

// SignIn checks an email and password and returns the account they sign in to.
func (s *Service) SignIn(ctx context.Context, email, password string) (string, error) {
	email, err := normalEmail(email)
	if err != nil {
		return "", ErrBadCredentials
	}
	var login engine.LoginEvent
	_, err = s.log.Last(ctx, loginSubject(email), &login)
	if errors.Is(err, port.ErrNoMessage) {
		// Spend the time a hash check takes, so timing does not tell
		// which emails have a login.
		_ = bcrypt.CompareHashAndPassword(s.dummyHash, []byte(password))
		return "", ErrBadCredentials
	}
	if err != nil {
		return "", internal("read login", err)
	}
	if bcrypt.CompareHashAndPassword([]byte(login.Hash), []byte(password)) != nil {
		return "", ErrBadCredentials
	}
	return login.AccountID, nil
}

// defaultDummyHash is the bcrypt hash, at the default cost, of a password
// no one has: an unknown email's sign-in checks against it. Written out,
// so no process pays a hash at start (under the race detector one takes
// most of a second).
const defaultDummyHash = "$2a$10$1dxY9eafreZV6TpkazHq1e..jAfPxXBH7MUs4vW2fIlqNMR7HNpmm"

// dummyHashAt is a hash of the same cost as new passwords', so that an
// unknown email's sign-in takes as long as a known one's.
func dummyHashAt(cost int) ([]byte, error) {
	if cost == bcrypt.DefaultCost {
		return []byte(defaultDummyHash), nil
	}
	return bcrypt.GenerateFromPassword([]byte("not a password of anyone's"), cost)
}

// ErrBadCredentials is a sign-in with an unknown email or a wrong password
// (the two are not told apart).
var ErrBadCredentials = errors.New("service: wrong email or password")

// Password rules: what sign-up takes (the website says MinPassword).
const (
	MinPassword = 10 // characters
	MaxPassword = 72 // bytes: bcrypt reads no further
)

// The rules a password can break: the FieldError.Code of each of
// CheckPassword's refusals, for a surface to say in its own words.
const (
	PasswordTooShort = "too_short" // fewer than MinPassword characters
	PasswordTooLong  = "too_long"  // more than MaxPassword bytes
)

// CheckPassword checks a new password against the password rules: at
// least MinPassword characters (not bytes: three emoji are three), at
// most MaxPassword bytes (what bcrypt reads; a character outside ASCII
// takes 2 to 4).
func CheckPassword(password string) error {
	refuse := func(rule, format string, args ...any) error {
		e := engine.Errorf(engine.CodeInvalidInput, format, args...)
		e.Fields = []engine.FieldError{{Field: "password", Code: rule, Message: e.Message}}
		return e
	}
	if utf8.RuneCountInString(password) < MinPassword {
		return refuse(PasswordTooShort, "password: at least %d characters", MinPassword)
	}
	if len(password) > MaxPassword {
		return refuse(PasswordTooLong, "password: at most %d bytes in UTF-8 (a character outside ASCII takes 2 to 4)", MaxPassword)
	}
	return nil
}

// NormalEmail checks an email address as a login takes it and returns
// it normalised (trimmed, lower case).
func NormalEmail(email string) (string, error) { return normalEmail(email) }

// notAnEmail is the refusal of an email address, its field named.
func notAnEmail() error {
	e := engine.Errorf(engine.CodeInvalidInput, "email: must be an email address")
	e.Fields = []engine.FieldError{{Field: "email", Code: "email", Message: e.Message}}
	return e
}

// normalEmail checks and normalises an email address for a login.
func normalEmail(email string) (string, error) {
	if !utf8.ValidString(email) { // strings.ToLower would make U+FFFD of it
		return "", notAnEmail()
	}
	email = strings.ToLower(strings.TrimSpace(email))
	at := strings.LastIndexByte(email, '@')
	if len(email) > 254 || at < 1 || at == len(email)-1 || strings.ContainsAny(email, " \t\r\n<>") {
		return "", notAnEmail()
	}
	return email, nil
}
