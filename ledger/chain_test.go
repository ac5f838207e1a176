package ledger_test

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/apprun/apprun/ledger"
)

// written is an account's events as a signing writer stores them: each
// stamped from the account as read back (its Head the hash of the stored
// bytes), signed, encoded.
func written(t *testing.T, s *ledger.Signer, steps ...func(ledger.Account) (ledger.Event, error)) [][]byte {
	t.Helper()
	var acct ledger.Account
	var out [][]byte
	for _, step := range steps {
		ev, err := step(acct)
		if err != nil {
			t.Fatal(err)
		}
		if ev, err = s.Sign(ev); err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, data)
		acct = ledger.Apply(acct, ev)
		acct.Head = ledger.Hash(data)
	}
	return out
}

func signer(t *testing.T) (*ledger.Signer, ed25519.PublicKey) {
	t.Helper()
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ledger.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	return s, s.PublicKey()
}

var at = time.Date(2026, 11, 28, 1, 2, 3, 4_000_000, time.UTC)

// Every kind of account event, as a writer stores it.
func history(t *testing.T, s *ledger.Signer) [][]byte {
	return written(t, s,
		func(ledger.Account) (ledger.Event, error) {
			return ledger.Open("acct_1", "a@example.com", 100, at, ledger.By{})
		},
		func(a ledger.Account) (ledger.Event, error) { return ledger.Grant(a, 50, at, ledger.By{}) },
		func(a ledger.Account) (ledger.Event, error) { return ledger.Charge(a, "run_1", "app", 25, 3, at) },
		func(a ledger.Account) (ledger.Event, error) { return ledger.Settle(a, "run_1", "app", at) },
		func(a ledger.Account) (ledger.Event, error) { return ledger.Charge(a, "run_2", "app", 25, 3, at) },
		func(a ledger.Account) (ledger.Event, error) { return ledger.Refund(a, "run_2", "app", 25, at) },
		func(a ledger.Account) (ledger.Event, error) {
			return ledger.Purchase(a, 500, "cs_1", "starter", 2000, "usd", at)
		},
		func(a ledger.Account) (ledger.Event, error) { return ledger.Revoke(a, 500, "cs_1", 2000, "usd", at) },
	)
}

func check(t *testing.T, pub ed25519.PublicKey, log [][]byte) (*ledger.Chain, []error) {
	t.Helper()
	c := ledger.NewChain(pub)
	var errs []error
	for _, data := range log {
		var ev ledger.Event
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Fatal(err)
		}
		if err := c.Check(ev.AccountID, data, ev); err != nil {
			errs = append(errs, err)
		}
	}
	return c, errs
}

func TestASignedHistoryChecks(t *testing.T) {
	t.Parallel()
	s, pub := signer(t)
	c, errs := check(t, pub, history(t, s))
	if len(errs) != 0 || !c.Signed || c.Unsigned != 0 {
		t.Fatalf("errors %v, signed %v, unsigned %d", errs, c.Signed, c.Unsigned)
	}
}

// Each way to change a signed history is found, as the error that says
// what it is.
func TestTamperingBreaksTheChain(t *testing.T) {
	t.Parallel()
	s, pub := signer(t)
	other, _ := signer(t)
	forge := func(ev ledger.Event) []byte {
		data, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	cases := map[string]struct {
		tamper func([][]byte) [][]byte
		want   error
	}{
		"an unsigned grant appended": {func(h [][]byte) [][]byte {
			return append(h, forge(ledger.Event{Type: ledger.CreditsGranted, V: 1, AccountID: "acct_1", Amount: 5000, Balance: 5125}))
		}, ledger.ErrUnsigned},
		"a grant signed by another key": {func(h [][]byte) [][]byte {
			var last ledger.Event
			_ = json.Unmarshal(h[len(h)-1], &last)
			ev, _ := other.Sign(ledger.Event{Type: ledger.CreditsGranted, V: 1, AccountID: "acct_1", Amount: 5000, Balance: last.Balance + 5000, Prev: ledger.Hash(h[len(h)-1])})
			return append(h, forge(ev))
		}, ledger.ErrBadSignature},
		"an amount changed after signing": {func(h [][]byte) [][]byte {
			var ev ledger.Event
			_ = json.Unmarshal(h[1], &ev)
			ev.Amount, ev.Balance = 900, 1000
			h[1] = forge(ev)
			return h
		}, ledger.ErrBadSignature},
		"an event removed from the middle": {func(h [][]byte) [][]byte {
			return append(h[:4:4], h[6:]...)
		}, ledger.ErrBrokenLink},
		"a signed event replayed": {func(h [][]byte) [][]byte {
			return append(h, h[1])
		}, ledger.ErrBrokenLink},
	}
	for name, c := range cases {
		_, errs := check(t, pub, c.tamper(history(t, s)))
		if len(errs) == 0 || !errors.Is(errs[0], c.want) {
			t.Errorf("%s: found %v, want %v", name, errs, c.want)
		}
	}
}

// Events written before the ledger was signed are counted, not refused;
// once a signed event is seen, an unsigned one is a forgery.
func TestHistoryBeforeSigningIsCountedNotRefused(t *testing.T) {
	t.Parallel()
	s, pub := signer(t)
	old, err := ledger.Open("acct_0", "old@example.com", 10, at, ledger.By{})
	if err != nil {
		t.Fatal(err)
	}
	legacy, _ := json.Marshal(old)
	log := append([][]byte{legacy}, history(t, s)...)
	c, errs := check(t, pub, log)
	if len(errs) != 0 || c.Unsigned != 1 {
		t.Fatalf("errors %v, unsigned %d: want none and 1", errs, c.Unsigned)
	}
	if _, errs := check(t, pub, append(log, legacy)); len(errs) != 1 || !errors.Is(errs[0], ledger.ErrUnsigned) {
		t.Fatalf("an unsigned event after the signed ones: %v", errs)
	}
}

func TestASignerNeedsAWholeKey(t *testing.T) {
	t.Parallel()
	if _, err := ledger.NewSigner(make([]byte, 31)); err == nil {
		t.Fatal("a 31-byte key was taken")
	}
}
