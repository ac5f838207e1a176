package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/subjects"
	"golang.org/x/crypto/bcrypt"
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

// ErrBadCredentials is a sign-in with an unknown email or a wrong password
// (the two are not told apart).
var ErrBadCredentials = errors.New("engine: wrong email or password")

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

func loginSubject(email string) string {
	sum := sha256.Sum256([]byte(email))
	return subjects.LoginPrefix + hex.EncodeToString(sum[:16])
}

// SignUp opens an account with a welcome grant and a login for email, in
// one atomic write. An email that already has a login is email_taken.
func (e *Engine) SignUp(ctx context.Context, email, password string, credits int64) (string, uint64, error) {
	email, err := NormalEmail(email)
	if err != nil {
		return "", 0, err
	}
	if len(password) < MinPassword || len(password) > MaxPassword {
		return "", 0, Errorf(CodeInvalidInput, "password: %d to %d characters", MinPassword, MaxPassword)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), e.cfg.PasswordCost)
	if err != nil {
		return "", 0, internal("hash password", err)
	}
	id := e.id(PrefixAccount, 10)
	open, err := ledger.Open(id, email, credits, e.now())
	if err != nil {
		return "", 0, Errorf(CodeInvalidInput, "credits: must be between 0 and %d", ledger.MaxGrant)
	}
	login := LoginEvent{Type: "login_created", V: EventVersion, At: e.now(), AccountID: id, Email: email, Hash: string(hash)}
	seq, err := e.appendResolved(ctx,
		entry{subject: loginSubject(email), value: login, expect: expectSeq(0)},
		entry{subject: subjects.Account(id), value: open, expect: expectSeq(0)},
	)
	if errors.Is(err, ErrConflict) {
		return "", 0, Errorf(CodeEmailTaken, "an account with this email exists: sign in instead")
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
func (e *Engine) SignIn(ctx context.Context, email, password string) (string, error) {
	email, err := NormalEmail(email)
	if err != nil {
		return "", ErrBadCredentials
	}
	var login LoginEvent
	_, err = e.log.last(ctx, loginSubject(email), &login)
	if errors.Is(err, ErrNoMessage) {
		// Spend the time a hash check takes, so timing does not tell
		// which emails have a login.
		_ = bcrypt.CompareHashAndPassword(e.dummyHash, []byte(password))
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
