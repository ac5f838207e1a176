package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	. "github.com/apprun/apprun/engine"
)

// lostAnswers loses the answer of the next appends whose first entry's
// data holds mark: with stored set the write is stored first (its ack is
// lost), else it is never sent (lost on the way); both are ErrAmbiguous to
// the engine, as a timeout or a leader change leaves them.
type lostAnswers struct {
	Log
	mu     sync.Mutex
	mark   string
	stored []bool // one per coming marked append
}

func (l *lostAnswers) Append(ctx context.Context, entries ...Entry) (uint64, error) {
	l.mu.Lock()
	lose, stored := false, false
	if strings.Contains(string(entries[0].Data), l.mark) && len(l.stored) > 0 {
		lose, stored, l.stored = true, l.stored[0], l.stored[1:]
	}
	l.mu.Unlock()
	if !lose {
		return l.Log.Append(ctx, entries...)
	}
	if stored {
		if _, err := l.Log.Append(ctx, entries...); err != nil {
			return 0, err
		}
	}
	return 0, ErrAmbiguous
}

// A grant or an account opening whose answer was lost is resolved before
// the answer: it is made exactly once whether or not the lost write was
// stored, and the answer says it was made. Answered 503 "safe to retry",
// a grant stored all the same was granted again by its retry.
func TestAWriteWhoseAnswerWasLostIsMadeOnce(t *testing.T) {
	t.Parallel()
	for _, stored := range []bool{true, false} {
		lost := &lostAnswers{mark: `"credits_granted"`}
		e := startEngineWith(t, false, Limits{}, func(l Log) Log { lost.Log = l; return lost })
		ctx := context.Background()
		acct, err := e.OpenAccount(ctx, "a@example.com", 10)
		if err != nil {
			t.Fatal(err)
		}
		lost.stored = []bool{stored, stored, stored}
		balance, _, err := e.GrantCredits(ctx, acct.AccountID, 5)
		if err != nil || balance != 15 {
			t.Fatalf("a grant whose answers were lost (stored: %v): %d %v, want 15 and no error", stored, balance, err)
		}
		if a, _, err := e.Account(ctx, acct.AccountID); err != nil || a.Balance != 15 {
			t.Fatalf("the account after it (stored: %v): %+v %v, want 15 (granted once)", stored, a, err)
		}

		lost.mark, lost.stored = `"account_opened"`, []bool{stored, stored}
		opened, err := e.OpenAccount(ctx, "b@example.com", 7)
		if err != nil {
			t.Fatalf("an account opening whose answers were lost (stored: %v): %v", stored, err)
		}
		if a, _, err := e.Account(ctx, opened.AccountID); err != nil || a.Balance != 7 {
			t.Fatalf("the account it opened (stored: %v): %+v %v", stored, a, err)
		}

		lost.mark, lost.stored = `"key_created"`, []bool{stored, stored}
		if _, err := e.CreateKey(ctx, acct.AccountID, "lost"); err != nil {
			t.Fatalf("a key whose answers were lost (stored: %v): %v", stored, err)
		}
		if n, err := e.ActiveKeys(ctx, acct.AccountID); err != nil || n != 2 {
			t.Fatalf("the account's keys after it (stored: %v): %d %v, want 2 (the first and this one)", stored, n, err)
		}

		lost.mark, lost.stored = `"webhook_endpoints"`, []bool{stored, stored}
		if _, err := e.AddWebhookEndpoint(ctx, acct.AccountID, "https://hooks.example.com/a"); err != nil {
			t.Fatalf("an endpoint whose answers were lost (stored: %v): %v", stored, err)
		}
		if eps, _, err := e.WebhookEndpoints(ctx, acct.AccountID); err != nil || len(eps) != 1 {
			t.Fatalf("the endpoints after it (stored: %v): %+v %v, want one", stored, eps, err)
		}

		lost.mark, lost.stored = `"login_created"`, []bool{stored, stored}
		email := fmt.Sprintf("c%v@example.com", stored)
		id, _, err := e.SignUp(ctx, email, "a long enough password", 3)
		if err != nil {
			t.Fatalf("a sign-up whose answers were lost (stored: %v): %v, want the account (not email_taken)", stored, err)
		}
		if got, err := e.SignIn(ctx, email, "a long enough password"); err != nil || got != id {
			t.Fatalf("signing in after it (stored: %v): %q %v, want %q", stored, got, err, id)
		}
	}
}
