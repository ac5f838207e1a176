package service_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
)

// A key's name is a label of at most MaxKeyName characters of UTF-8 text
// on one line, whichever surface names it; a refused name makes no key.
func TestAKeysNameIsOneLineOfUTF8Text(t *testing.T) {
	t.Parallel()
	e := startEngineWith(t, false, engine.Limits{}, nil, okApp())
	ctx := context.Background()
	acct, err := e.OpenAccount(ctx, "names@example.com", 10, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"two\nlines", "caf\xe9", strings.Repeat("k", engine.MaxKeyName+1)} {
		if _, err := e.CreateKey(ctx, acct.AccountID, bad); engine.ErrorCode(err) != engine.CodeInvalidInput {
			t.Errorf("name %q: %v, want %s", bad, err, engine.CodeInvalidInput)
		}
	}
	// MaxKeyName counts characters, as the refusal says, not bytes.
	for _, good := range []string{" café 中 ", strings.Repeat("é", engine.MaxKeyName)} {
		if _, err := e.CreateKey(ctx, acct.AccountID, good); err != nil {
			t.Errorf("name %q: %v", good, err)
		}
	}
}
