package service_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/service"
	"golang.org/x/crypto/bcrypt"
)

// A reset sets the new password with a password_changed event: sign-in
// takes the new password and refuses the old at once.
func TestResetPasswordReplacesThePasswordSignInChecks(t *testing.T) {
	t.Parallel()
	e := startEngineConfig(t, false, engine.Limits{}, nil, func(c *service.Config) { c.PasswordCost = bcrypt.MinCost }, okApp())
	ctx := context.Background()
	id, _, err := e.SignUp(ctx, "ann@example.com", "the old password", 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.PasswordResetTicket(ctx, "nobody@example.com"); !errors.Is(err, service.ErrNoLogin) {
		t.Fatalf("an unknown email's ticket: %v, want ErrNoLogin", err)
	}
	ticket, err := e.PasswordResetTicket(ctx, " ANN@example.com")
	if err != nil || ticket.AccountID != id || ticket.Email != "ann@example.com" || ticket.LoginSeq == 0 {
		t.Fatalf("ticket %+v, %v", ticket, err)
	}
	// A password the rules refuse writes nothing: the ticket still works.
	var ee *engine.Error
	if _, err := e.ResetPassword(ctx, ticket, "short"); !errors.As(err, &ee) || ee.Code != engine.CodeInvalidInput {
		t.Fatalf("a short password: %v, want invalid_input", err)
	}
	if _, err := e.ResetPassword(ctx, ticket, "the new password"); err != nil {
		t.Fatal(err)
	}
	if got, err := e.SignIn(ctx, "ann@example.com", "the new password"); err != nil || got != id {
		t.Fatalf("sign-in with the new password: %q, %v", got, err)
	}
	if _, err := e.SignIn(ctx, "ann@example.com", "the old password"); !errors.Is(err, service.ErrBadCredentials) {
		t.Fatalf("sign-in with the old password: %v, want ErrBadCredentials", err)
	}
	// The same ticket again, and one made before the change, are stale.
	if _, err := e.ResetPassword(ctx, ticket, "a third password"); !errors.Is(err, service.ErrResetStale) {
		t.Fatalf("a used ticket: %v, want ErrResetStale", err)
	}
	if _, err := e.SignIn(ctx, "ann@example.com", "a third password"); !errors.Is(err, service.ErrBadCredentials) {
		t.Fatal("a stale ticket changed the password")
	}
}

// Two resets with one ticket at once: the compare-and-set on the login
// lets exactly one through.
func TestOneTicketSetsOnePasswordUnderConcurrency(t *testing.T) {
	t.Parallel()
	e := startEngineConfig(t, false, engine.Limits{}, nil, func(c *service.Config) { c.PasswordCost = bcrypt.MinCost }, okApp())
	ctx := context.Background()
	if _, _, err := e.SignUp(ctx, "bob@example.com", "the old password", 10); err != nil {
		t.Fatal(err)
	}
	ticket, err := e.PasswordResetTicket(ctx, "bob@example.com")
	if err != nil {
		t.Fatal(err)
	}
	const tries = 8
	errs := make([]error, tries)
	var wg sync.WaitGroup
	for i := range tries {
		wg.Go(func() { _, errs[i] = e.ResetPassword(ctx, ticket, "new password number "+string(rune('a'+i))) })
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won < 0:
			won = i
		case err == nil:
			t.Fatalf("tries %d and %d both set the password", won, i)
		case !errors.Is(err, service.ErrResetStale):
			t.Fatalf("try %d: %v, want ErrResetStale", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no try set the password")
	}
	if _, err := e.SignIn(ctx, "bob@example.com", "new password number "+string(rune('a'+won))); err != nil {
		t.Fatalf("the winner's password does not sign in: %v", err)
	}
}
