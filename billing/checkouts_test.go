package billing

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apprun/apprun/billing/stripemock"
	"github.com/apprun/apprun/engine"
)

// clock is a seller's clock that a test moves.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// sellerWith is a seller on base with the engine f and the clock c: two
// sellers on one engine are two nodes on one log.
func sellerWith(t *testing.T, base string, f *fakeEngine, c *clock) *Stripe {
	t.Helper()
	packs, err := ParsePacks("100:500:usd,500:2000:usd")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{SecretKey: "sk_test_123", WebhookSecret: secret, APIBase: base, Packs: packs,
		SiteURL: "http://127.0.0.1:8080", Now: c.now}, f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// complete delivers Stripe's checkout.session.completed for id to s.
func complete(t *testing.T, s *Stripe, id, account, pack, paymentStatus string) {
	t.Helper()
	body, sig := stripemock.Event(secret, "evt_"+id, "checkout.session.completed",
		stripemock.Session(id, account, pack, paymentStatus, "pi_"+id, 500), s.now())
	if err := s.Handle(context.Background(), body, sig); err != nil {
		t.Fatalf("completing %s: %v", id, err)
	}
}

// The finding: a client in a loop made a session per request. Twenty
// clicks at once on one pack make one session at Stripe, and every click
// gets it; another pack, or another account, has its own.
func TestConcurrentCheckoutsOfOnePackMakeOneSession(t *testing.T) {
	t.Parallel()
	mock := stripemock.StartCounted(t)
	s := sellerWith(t, mock.URL, &fakeEngine{}, &clock{t: time.Now()})
	ids := make([]string, 20)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs, err := s.Checkout(context.Background(), "acct_a", "100-500-usd")
			if err != nil {
				t.Error(err)
			}
			ids[i] = cs.ID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("sessions %v: want one", ids)
		}
	}
	if n := len(mock.Sessions()); n != 1 {
		t.Fatalf("%d sessions made at Stripe for twenty clicks on one pack, want 1", n)
	}
	other, _ := s.Checkout(context.Background(), "acct_a", "500-2000-usd")
	another, _ := s.Checkout(context.Background(), "acct_b", "100-500-usd")
	if n := len(mock.Sessions()); n != 3 || other.ID == ids[0] || another.ID == ids[0] || other.ID == another.ID {
		t.Fatalf("%d sessions (%s, %s, %s): want one per account and pack", n, ids[0], other.ID, another.ID)
	}
}

// A session is given again only while it is open: not once it has less
// than ReuseMargin left, not once its checkout.session.completed reached
// this node (paid or not), and not once it was paid, whichever node was
// told (the purchase is in the log).
func TestAnOpenSessionIsGivenAgainUntilItEndsOrIsPaid(t *testing.T) {
	t.Parallel()
	mock := stripemock.StartCounted(t)
	ctx := context.Background()
	c := &clock{t: time.Now().Truncate(time.Second)}
	log := &fakeEngine{}
	node1, node2 := sellerWith(t, mock.URL, log, c), sellerWith(t, mock.URL, log, c)
	made := func(want int) {
		t.Helper()
		if n := len(mock.Sessions()); n != want {
			t.Fatalf("%d sessions made at Stripe, want %d", n, want)
		}
	}
	first, _ := node1.Checkout(ctx, "acct_a", "100-500-usd")
	form := mock.Sessions()[0]
	if form.Get("expires_at") != strconv.FormatInt(c.now().Add(SessionLife).Unix(), 10) || form.Get("client_reference_id") != "acct_a" {
		t.Fatalf("created with expires_at %s for %s, want now + %s for acct_a", form.Get("expires_at"), form.Get("client_reference_id"), SessionLife)
	}
	c.add(SessionLife - ReuseMargin)
	if again, _ := node1.Checkout(ctx, "acct_a", "100-500-usd"); again != first {
		t.Fatalf("with %s left: %+v, want the open session %+v", ReuseMargin, again, first)
	}
	made(1)
	c.add(time.Second)
	second, _ := node1.Checkout(ctx, "acct_a", "100-500-usd")
	if made(2); second.ID == first.ID {
		t.Fatal("a session with less than ReuseMargin left was given again")
	}

	// Completed, its payment pending (a bank debit): not given again.
	complete(t, node1, second.ID, "acct_a", "100-500-usd", "unpaid")
	third, _ := node1.Checkout(ctx, "acct_a", "100-500-usd")
	if made(3); third.ID == second.ID {
		t.Fatal("a completed session was given again")
	}

	// Paid, with the webhook on the other node: node1 reads the purchase.
	complete(t, node2, third.ID, "acct_a", "100-500-usd", "paid")
	if len(log.grants) != 1 {
		t.Fatalf("grants %+v", log.grants)
	}
	fourth, _ := node1.Checkout(ctx, "acct_a", "100-500-usd")
	if made(4); fourth.ID == third.ID {
		t.Fatal("a paid session was given again")
	}
}

// An account makes at most CheckoutsPerHour sessions an hour, failed
// attempts at Stripe included; past that it is answered rate_limited with
// when the oldest leaves the hour, nothing is asked of Stripe, and its
// open session is still given. Other accounts are not affected.
func TestCheckoutsOfAnAccountAreLimitedAnHour(t *testing.T) {
	t.Parallel()
	mock := stripemock.StartCounted(t)
	ctx := context.Background()
	c := &clock{t: time.Now().Truncate(time.Second)}
	s := sellerWith(t, mock.URL, &fakeEngine{}, c)
	mock.Refuse.Store(true)
	if _, err := s.Checkout(ctx, "acct_a", "100-500-usd"); engine.ErrorCode(err) != engine.CodePaymentProvider {
		t.Fatalf("Stripe refusing: %v", err)
	}
	mock.Refuse.Store(false)
	var open Session
	for i := 1; i < CheckoutsPerHour; i++ {
		c.add(time.Minute)
		cs, err := s.Checkout(ctx, "acct_a", "100-500-usd")
		if err != nil {
			t.Fatalf("checkout %d: %v", i+1, err)
		}
		if open = cs; i < CheckoutsPerHour-1 {
			complete(t, s, cs.ID, "acct_a", "100-500-usd", "unpaid")
		}
	}
	if n := len(mock.Sessions()); n != CheckoutsPerHour {
		t.Fatalf("%d creates at Stripe, want %d", n, CheckoutsPerHour)
	}
	_, err := s.Checkout(ctx, "acct_a", "500-2000-usd")
	var e *engine.Error
	if engine.ErrorCode(err) != engine.CodeRateLimited || !errors.As(err, &e) || e.RetryAfter != 51*time.Minute+time.Second {
		t.Fatalf("checkout %d within the hour: %v, want rate_limited for 51m1s (the first attempt leaves the hour in 51m)", CheckoutsPerHour+1, err)
	}
	if again, err := s.Checkout(ctx, "acct_a", "100-500-usd"); err != nil || again != open {
		t.Fatalf("the open session while limited: %+v %v, want %+v", again, err, open)
	}
	if _, err := s.Checkout(ctx, "acct_b", "500-2000-usd"); err != nil {
		t.Fatalf("another account: %v", err)
	}
	if n := len(mock.Sessions()); n != CheckoutsPerHour+1 {
		t.Fatalf("%d creates at Stripe, want %d: a limited checkout asked Stripe", n, CheckoutsPerHour+1)
	}
	c.add(51 * time.Minute)
	if _, err := s.Checkout(ctx, "acct_a", "500-2000-usd"); err != nil {
		t.Fatalf("once the first attempt left the hour: %v", err)
	}
}
