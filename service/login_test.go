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

// TestThePasswordRulesCountCharactersAndBcryptsBytes: the least is 10
// characters, not bytes (three emoji are 12 bytes and 3 characters), and
// the most is what bcrypt reads, 72 bytes, named as such; each refusal
// names its rule in Fields for a surface to say in words.
func TestThePasswordRulesCountCharactersAndBcryptsBytes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		password, rule string
	}{
		{"short", service.PasswordTooShort},
		{strings.Repeat("🔑", 3), service.PasswordTooShort},
		{strings.Repeat("é", 9), service.PasswordTooShort},
		{strings.Repeat("🔑", 19), service.PasswordTooLong},
		{strings.Repeat("a", 73), service.PasswordTooLong},
		{strings.Repeat("é", 10), ""},
		{strings.Repeat("🔑", 18), ""},
		{strings.Repeat("a", 72), ""},
	} {
		err := service.CheckPassword(c.password)
		var e *engine.Error
		switch {
		case c.rule == "" && err != nil:
			t.Errorf("%q (%d bytes): %v, want it taken", c.password, len(c.password), err)
		case c.rule != "" && (!errors.As(err, &e) || len(e.Fields) != 1 || e.Fields[0].Code != c.rule || e.Fields[0].Field != "password"):
			t.Errorf("%q (%d bytes): %v, want refused by rule %s", c.password, len(c.password), err, c.rule)
		}
	}
}
