package service_test

import (
	"context"
	"testing"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
)

// An email that is not UTF-8 is refused wherever an account is opened:
// the account's event is JSON, which would store U+FFFD in its place, so
// the address kept would not be the one given.
func TestAnEmailThatIsNotUTF8IsRefused(t *testing.T) {
	t.Parallel()
	e := startEngineWith(t, false, engine.Limits{}, nil, okApp())
	ctx := context.Background()
	const bad = "caf\xe9@example.com"
	if _, _, err := e.SignUp(ctx, bad, "a long password", 10); engine.ErrorCode(err) != engine.CodeInvalidInput {
		t.Errorf("sign-up with %q: %v, want %s", bad, err, engine.CodeInvalidInput)
	}
	if _, err := e.OpenAccount(ctx, bad, 10, ledger.By{Actor: "system:test", Reason: "test"}); engine.ErrorCode(err) != engine.CodeInvalidInput {
		t.Errorf("opening an account for %q: %v, want %s", bad, err, engine.CodeInvalidInput)
	}
	if _, _, err := e.SignUp(ctx, "café@example.com", "a long password", 10); err != nil {
		t.Errorf("sign-up with an address in UTF-8: %v", err)
	}
}
