package service_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/service"
	"golang.org/x/crypto/bcrypt"
)

func TestSignUpHashesAtTheConfiguredCostAndSignsIn(t *testing.T) {
	t.Parallel()
	e := startEngineConfig(t, false, engine.Limits{}, nil, func(c *service.Config) { c.PasswordCost = bcrypt.MinCost }, okApp())
	ctx := context.Background()
	id, _, err := e.SignUp(ctx, "Someone@Example.com", "a long password", 100)
	if err != nil {
		t.Fatal(err)
	}
	hash, err := e.LoginHash(ctx, "someone@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if cost, err := bcrypt.Cost([]byte(hash)); err != nil || cost != bcrypt.MinCost {
		t.Fatalf("the stored hash's cost: %d, %v; want %d", cost, err, bcrypt.MinCost)
	}
	got, err := e.SignIn(ctx, "someone@example.com", "a long password")
	if err != nil || got != id {
		t.Fatalf("sign-in: %q, %v; want %q", got, err, id)
	}
	for _, try := range [][2]string{{"someone@example.com", "a wrong password"}, {"no-one@example.com", "a long password"}} {
		if _, err := e.SignIn(ctx, try[0], try[1]); !errors.Is(err, service.ErrBadCredentials) {
			t.Fatalf("sign-in as %q with %q: %v, want ErrBadCredentials", try[0], try[1], err)
		}
	}
}

func TestThePasswordCostIsABcryptCost(t *testing.T) {
	t.Parallel()
	for _, cost := range []int{bcrypt.MinCost - 1, bcrypt.MaxCost + 1, -1} {
		_, err := newEngineConfig(t, false, engine.Limits{}, nil, func(c *service.Config) { c.PasswordCost = cost }, okApp())
		if err == nil || !strings.Contains(err.Error(), "PasswordCost") {
			t.Fatalf("cost %d: %v, want a PasswordCost error", cost, err)
		}
	}
}

func TestTheWrittenOutDummyHashIsAWholeDefaultCostHash(t *testing.T) {
	t.Parallel()
	if cost, err := bcrypt.Cost([]byte(service.DefaultDummyHash)); err != nil || cost != bcrypt.DefaultCost {
		t.Fatalf("the written-out dummy hash's cost: %d, %v; want %d", cost, err, bcrypt.DefaultCost)
	}
	if err := bcrypt.CompareHashAndPassword([]byte(service.DefaultDummyHash), []byte("not a password of anyone's")); err != nil {
		t.Fatalf("the written-out dummy hash is not a whole bcrypt hash: %v", err)
	}
}
