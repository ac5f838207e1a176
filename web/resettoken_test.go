package web

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apprun/apprun/embednats/natstest"
	"github.com/apprun/apprun/service"
	"github.com/nats-io/nats.go/jetstream"
)

// A reset token: the bucket holds its hash only; reading it uses nothing
// up; of concurrent consumes at the revision read, exactly one wins (the
// compare-and-set on the key, whatever the login's own check does); and
// past its lifetime it reads as gone.
func TestResetTokensAreHashedSingleUseAndExpire(t *testing.T) {
	t.Parallel()
	js, err := jetstream.New(natstest.Connect(t, false))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	kv, err := ResetBucket(ctx, js, 1)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := kv.Status(ctx); err != nil || st.TTL() != ResetTTL {
		t.Fatalf("the bucket's TTL: %v, want %s", err, ResetTTL)
	}
	var ahead atomic.Int64
	rt := &resetTokens{kv: kv, now: func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }}
	ticket := service.ResetTicket{AccountID: "acct_1", Email: "a@example.com", LoginSeq: 7}
	token, err := rt.issue(ctx, ticket)
	if err != nil || len(token) != 43 {
		t.Fatalf("token %q, %v: want 32 bytes in base64url", token, err)
	}
	keys, _ := kv.Keys(ctx)
	if len(keys) != 1 || keys[0] == token || keys[0] != sessionKey(token) {
		t.Fatalf("the bucket holds %v, want the token's hash only", keys)
	}
	var rev uint64
	for range 2 {
		l, r, err := rt.peek(ctx, token)
		if err != nil || l.Ticket != ticket {
			t.Fatalf("peek: %+v, %v", l, err)
		}
		rev = r
	}
	if _, _, err := rt.peek(ctx, strings.Repeat("A", 43)); !errors.Is(err, errLinkGone) {
		t.Fatalf("an unknown token: %v", err)
	}
	const tries = 6
	errs := make([]error, tries)
	var wg sync.WaitGroup
	for i := range tries {
		wg.Go(func() { errs[i] = rt.consume(ctx, token, rev) })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, errLinkGone):
			t.Fatalf("a losing consume: %v, want errLinkGone", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d consumes of one token won, want 1", won)
	}
	if _, _, err := rt.peek(ctx, token); !errors.Is(err, errLinkGone) {
		t.Fatalf("a consumed token reads %v, want gone", err)
	}
	later, err := rt.issue(ctx, ticket)
	if err != nil {
		t.Fatal(err)
	}
	ahead.Store(int64(ResetTTL))
	if _, _, err := rt.peek(ctx, later); !errors.Is(err, errLinkGone) {
		t.Fatalf("a token at its lifetime's end reads %v, want gone", err)
	}
}
