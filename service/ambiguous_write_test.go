package service_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"

	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service"
)

// lostAnswers loses the answer of the next appends whose first entry's
// data holds mark: with stored set the write is stored first (its ack is
// lost), else it is never sent (lost on the way); both are ErrAmbiguous to
// the service, as a timeout or a leader change leaves them.
type lostAnswers struct {
	port.Log
	mu     sync.Mutex
	mark   string
	stored []bool // one per coming marked append
}

func (l *lostAnswers) Append(ctx context.Context, entries ...port.Entry) (uint64, error) {
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
	return 0, port.ErrAmbiguous
}

// A grant or an account opening whose answer was lost is resolved before
// the answer: it is made exactly once whether or not the lost write was
// stored, and the answer says it was made. Answered 503 "safe to retry",
// a grant stored all the same was granted again by its retry.
func TestAWriteWhoseAnswerWasLostIsMadeOnce(t *testing.T) {
	t.Parallel()
	for _, stored := range []bool{true, false} {
		lost := &lostAnswers{mark: `"credits_granted"`}
		e := startEngineWith(t, false, engine.Limits{}, func(l port.Log) port.Log { lost.Log = l; return lost })
		ctx := context.Background()
		acct, err := e.OpenAccount(ctx, "a@example.com", 10, ledger.By{Actor: "system:test", Reason: "test"})
		if err != nil {
			t.Fatal(err)
		}
		lost.stored = []bool{stored, stored, stored}
		balance, _, err := e.GrantCredits(ctx, acct.AccountID, 5, ledger.By{Actor: "system:test", Reason: "test"})
		if err != nil || balance != 15 {
			t.Fatalf("a grant whose answers were lost (stored: %v): %d %v, want 15 and no error", stored, balance, err)
		}
		if a, _, err := e.Account(ctx, acct.AccountID); err != nil || a.Balance != 15 {
			t.Fatalf("the account after it (stored: %v): %+v %v, want 15 (granted once)", stored, a, err)
		}

		lost.mark, lost.stored = `"account_opened"`, []bool{stored, stored}
		opened, err := e.OpenAccount(ctx, "b@example.com", 7, ledger.By{Actor: "system:test", Reason: "test"})
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

// goesDown stores the next admission but loses its answer, and then is
// down (every write refused, Available false) until brought back: the
// request answers 503, and resolving the admission is left to the
// background.
type goesDown struct {
	port.Log
	lose, down atomic.Bool
}

func (l *goesDown) Append(ctx context.Context, entries ...port.Entry) (uint64, error) {
	if l.down.Load() {
		return 0, port.ErrUnavailable
	}
	if l.lose.Load() && strings.HasPrefix(entries[len(entries)-1].Subject, "apprun.run.") &&
		strings.Contains(string(entries[len(entries)-1].Data), `"created"`) {
		l.lose.Store(false)
		if _, err := l.Log.Append(ctx, entries...); err != nil {
			return 0, err
		}
		l.down.Store(true)
		return 0, port.ErrAmbiguous
	}
	return l.Log.Append(ctx, entries...)
}

func (l *goesDown) Available() bool { return !l.down.Load() && l.Log.Available() }

// A create with an Idempotency-Key whose admission was stored but could
// not be resolved in time is answered 503, nothing charged: the run is
// voided once the log is back. Meanwhile a retry with the key is told to
// wait, not handed the run about to be voided; once it is voided, the key
// is free again and a retry makes a run of its own.
func TestAKeyedCreateAnswered503IsVoidedAndItsKeyFreed(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	held := engine.App{Slug: "held", Name: "held", Price: 5, Runnable: true, InputSchema: []byte(`{"type":"object"}`),
		Executor: engine.Executor(func(ctx context.Context, job engine.Job, progress func(engine.Step)) (engine.Result, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return engine.Result{Summary: "s"}, ctx.Err()
		})}
	gd := &goesDown{}
	e := startEngineWith(t, false, engine.Limits{}, func(l port.Log) port.Log { gd.Log = l; return gd }, held)
	ctx := context.Background()
	acct, err := e.OpenAccount(ctx, "a@example.com", 100, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	req := service.CreateRunRequest{AccountID: acct.AccountID, KeyID: acct.KeyID, AppSlug: "held", Input: map[string]any{},
		IdempotencyKey: "k"}
	gd.lose.Store(true)
	if _, err := e.CreateRun(ctx, req); !errors.Is(err, port.ErrAmbiguous) && !errors.Is(err, port.ErrUnavailable) {
		t.Fatalf("a create whose admission could not be resolved: %v, want a 503 (ErrAmbiguous)", err)
	}
	if _, err := e.CreateRun(ctx, req); engine.ErrorCode(err) != engine.CodeIdempotencyBusy {
		t.Fatalf("its retry while it is resolved: %v, want idempotency_in_progress", err)
	}
	gd.down.Store(false)
	deadline := time.Now().Add(20 * time.Second)
	for {
		a, _, err := e.Account(ctx, acct.AccountID)
		if err == nil && a.Balance == 100 && a.Active == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stored admission not voided within 20s: %+v %v", a, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	run, err := e.CreateRun(ctx, req)
	if err != nil || run.Replayed {
		t.Fatalf("a retry once the run was voided: %+v %v, want a run of its own", run, err)
	}
	if a, _, err := e.Account(ctx, acct.AccountID); err != nil || a.Balance != 95 {
		t.Fatalf("after the retry: %+v %v, want 95 (one charge)", a, err)
	}
}

// CreateRun makes its own input checks, whichever surface calls it: a
// webhook URL that cannot be delivered to and an Idempotency-Key that is
// not one are refused, and nothing is written. (The webhook check was the
// API's alone, and the website dropped a bad key.)
func TestCreateRunChecksWhatEverySurfaceSends(t *testing.T) {
	t.Parallel()
	e := startEngineWith(t, false, engine.Limits{}, nil, okApp())
	ctx := context.Background()
	acct, err := e.OpenAccount(ctx, "a@example.com", 100, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	head, _ := e.LogHead(ctx)
	for _, req := range []service.CreateRunRequest{
		{WebhookURL: "ftp://hooks.example.com/x"},
		{WebhookURL: "https://user:pw@hooks.example.com/x"},
		{IdempotencyKey: "tab\tkey"},
		{IdempotencyKey: strings.Repeat("k", 256)},
	} {
		req.AccountID, req.KeyID, req.AppSlug, req.Input = acct.AccountID, acct.KeyID, "ok", map[string]any{}
		if _, err := e.CreateRun(ctx, req); engine.ErrorCode(err) != engine.CodeInvalidRequest {
			t.Errorf("%+v: %v, want invalid_request", req, err)
		}
	}
	if now, _ := e.LogHead(ctx); now != head {
		t.Fatalf("refused creates wrote %d messages", now-head)
	}
}
