package billing

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v84/webhook"

	"github.com/apprun/apprun/billing/stripemock"
	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/service"
)

const secret = "whsec_test_secret"

// fakeEngine records what the webhook asked of the domain.
type fakeEngine struct {
	mu        sync.Mutex
	grants    []service.Purchase
	revokes   []int64
	unmatched []service.Unmatched
}

func (f *fakeEngine) GrantPurchase(_ context.Context, p service.Purchase) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p.AccountID == "acct_missing" {
		return false, engine.Errorf(engine.CodeAccountNotFound, "no account")
	}
	f.grants = append(f.grants, p)
	return true, nil
}

func (f *fakeEngine) RevokeRefunded(_ context.Context, pi string, refunded int64) (int64, error) {
	switch pi {
	case "pi_unknown":
		return 0, service.ErrNoPurchase
	case "pi_early":
		return 0, service.ErrRefundHeld
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revokes = append(f.revokes, refunded)
	return refunded / 5, nil
}

func (f *fakeEngine) DisputePurchase(_ context.Context, pi, id string, amount int64) (int64, int64, error) {
	if pi == "pi_unknown" {
		return 0, 0, service.ErrNoPurchase
	}
	return amount / 5, 0, nil
}

func (f *fakeEngine) CloseDispute(context.Context, string, string, int64, bool) (int64, error) {
	return 0, nil
}

func (f *fakeEngine) Purchased(_ context.Context, ref string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, g := range f.grants {
		if g.Ref == ref {
			return true, nil
		}
	}
	return false, nil
}

func (f *fakeEngine) RecordUnmatched(_ context.Context, u service.Unmatched) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unmatched = append(f.unmatched, u)
	return nil
}

func seller(t testing.TB, base string) (*Stripe, *fakeEngine) {
	t.Helper()
	packs, err := ParsePacks("100:500:usd,500:2000:usd")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeEngine{}
	s, err := New(Config{SecretKey: "sk_test_123", WebhookSecret: secret, APIBase: base, Packs: packs, SiteURL: "http://127.0.0.1:8080"}, f)
	if err != nil {
		t.Fatal(err)
	}
	return s, f
}

func TestPacksParseOrSayWhy(t *testing.T) {
	t.Parallel()
	packs, err := ParsePacks(" 100:500:usd, 500:2000:EUR ")
	if err != nil || len(packs) != 2 || packs[1] != (Pack{ID: "500-2000-eur", Credits: 500, Price: 2000, Currency: "eur"}) {
		t.Fatalf("%+v %v", packs, err)
	}
	for in, want := range map[string]string{
		"100:500": "credits:price:currency", "x:500:usd": "credits must", "100:0:usd": "price must",
		"100:500:dollars": "three-letter", "100:500:usd,100:500:usd": "twice",
	} {
		if _, err := ParsePacks(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
	if _, err := New(Config{SecretKey: "sk_test"}, &fakeEngine{}); err == nil {
		t.Error("a secret key without a webhook secret was accepted")
	}
	if _, err := New(Config{SecretKey: "sk_test", WebhookSecret: "whsec"}, &fakeEngine{}); err == nil {
		t.Error("Stripe without packs was accepted")
	}
	if s, err := New(Config{}, &fakeEngine{}); err != nil || s.Selling() || len(s.Packs()) != 0 {
		t.Error("no Stripe configuration should mean not selling")
	}
}

// A Checkout Session is created on stripe-mock (Stripe's own mock) for a
// pack, in payment mode, and its URL and id come back.
func TestCheckoutCreatesASessionOnStripeMock(t *testing.T) {
	t.Parallel()
	s, _ := seller(t, stripemock.Start(t))
	cs, err := s.Checkout(context.Background(), "acct_buyer", "100-500-usd")
	if err != nil || !strings.HasPrefix(cs.ID, "cs_") || !strings.HasPrefix(cs.URL, "https://") {
		t.Fatalf("session %+v, %v", cs, err)
	}
	if _, err := s.Checkout(context.Background(), "acct_buyer", "7-1-usd"); engine.ErrorCode(err) != engine.CodeInvalidInput {
		t.Fatalf("an unknown pack: %v", err)
	}
	down, _ := seller(t, "http://127.0.0.1:1")
	if _, err := down.Checkout(context.Background(), "acct_buyer", "100-500-usd"); engine.ErrorCode(err) != engine.CodePaymentProvider {
		t.Fatalf("Stripe unreachable: %v", err)
	}
	var none Stripe
	if _, err := none.Checkout(context.Background(), "acct_buyer", "100-500-usd"); engine.ErrorCode(err) != engine.CodeCreditsNotSold {
		t.Fatalf("not selling: %v", err)
	}
}

// The webhook: a verified paid session grants its pack; an unpaid one
// waits for async_payment_succeeded; a refund revokes; a bad signature or
// an old timestamp changes nothing; an unknown account or pack is kept.
func TestTheWebhookActsOnVerifiedEventsOnly(t *testing.T) {
	t.Parallel()
	s, f := seller(t, "")
	ctx := context.Background()
	now := time.Now()
	deliver := func(id, typ string, obj map[string]any, secretUsed string, at time.Time) error {
		body, sig := stripemock.Event(secretUsed, id, typ, obj, at)
		return s.Handle(ctx, body, sig)
	}
	if err := deliver("evt_bad", "checkout.session.completed", stripemock.Session("cs_1", "acct_a", "100-500-usd", "paid", "pi_1", 500), "whsec_wrong", now); engine.ErrorCode(err) != engine.CodeInvalidSignature {
		t.Fatalf("a bad signature: %v", err)
	}
	if err := deliver("evt_old", "checkout.session.completed", stripemock.Session("cs_1", "acct_a", "100-500-usd", "paid", "pi_1", 500), secret, now.Add(-time.Hour)); engine.ErrorCode(err) != engine.CodeInvalidSignature {
		t.Fatalf("an old timestamp: %v", err)
	}
	if len(f.grants)+len(f.unmatched) != 0 {
		t.Fatal("an unverified delivery reached the engine")
	}
	if err := deliver("evt_pending", "checkout.session.completed", stripemock.Session("cs_2", "acct_a", "100-500-usd", "unpaid", "pi_2", 500), secret, now); err != nil || len(f.grants) != 0 {
		t.Fatalf("an unpaid session: %v, %d grants", err, len(f.grants))
	}
	if err := deliver("evt_async", "checkout.session.async_payment_succeeded", stripemock.Session("cs_2", "acct_a", "100-500-usd", "paid", "pi_2", 500), secret, now); err != nil || len(f.grants) != 1 {
		t.Fatalf("async payment: %v, %d grants", err, len(f.grants))
	}
	if g := f.grants[0]; g != (service.Purchase{AccountID: "acct_a", Ref: "cs_2", Pack: "100-500-usd", Credits: 100, Paid: 500, Currency: "usd", PaymentIntent: "pi_2"}) {
		t.Fatalf("grant %+v", g)
	}
	if err := deliver("evt_refund", "charge.refunded", stripemock.Charge("ch_2", "pi_2", 500, 250), secret, now); err != nil || len(f.revokes) != 1 || f.revokes[0] != 250 {
		t.Fatalf("a refund: %v %v", err, f.revokes)
	}
	_ = deliver("evt_nopack", "checkout.session.completed", stripemock.Session("cs_3", "acct_a", "9-9-usd", "paid", "pi_3", 9), secret, now)
	_ = deliver("evt_noacct", "checkout.session.completed", stripemock.Session("cs_4", "acct_missing", "100-500-usd", "paid", "pi_4", 500), secret, now)
	_ = deliver("evt_norefund", "charge.refunded", stripemock.Charge("ch_9", "pi_unknown", 500, 500), secret, now)
	if len(f.unmatched) != 3 || f.unmatched[0].Reason != "unknown pack" || f.unmatched[1].Reason != "unknown account" || f.unmatched[2].EventID != "evt_norefund" {
		t.Fatalf("unmatched %+v", f.unmatched)
	}
	// A refund before its purchase is held by the engine: answered 200,
	// not kept as unmatched.
	if err := deliver("evt_early", "charge.refunded", stripemock.Charge("ch_8", "pi_early", 500, 100), secret, now); err != nil || len(f.unmatched) != 3 {
		t.Fatalf("a refund before its purchase: %v, unmatched %+v", err, f.unmatched)
	}
	// A completion that paid other than the pack's price, in amount or
	// currency, is held for the operator, not granted.
	yen := stripemock.Session("cs_5", "acct_a", "100-500-usd", "paid", "pi_5", 1)
	yen["currency"] = "jpy"
	for i, obj := range []map[string]any{yen, stripemock.Session("cs_6", "acct_a", "100-500-usd", "paid", "pi_6", 499)} {
		grants := len(f.grants)
		if err := deliver(fmt.Sprintf("evt_paid%d", i), "checkout.session.completed", obj, secret, now); err != nil || len(f.grants) != grants ||
			f.unmatched[len(f.unmatched)-1].Reason != "paid amount is not the pack's price" {
			t.Fatalf("paid %v %v: %v, %d grants, unmatched %+v", obj["amount_total"], obj["currency"], err, len(f.grants)-grants, f.unmatched[len(f.unmatched)-1])
		}
	}
	if err := deliver("evt_other", "customer.created", map[string]any{"id": "cus_1", "object": "customer"}, secret, now); err != nil {
		t.Fatalf("an event it does not act on: %v", err)
	}
}

// Any signed body: the webhook never panics, and grants only for a paid
// checkout session naming a pack on sale, paid at its price.
func FuzzStripeEvent(f *testing.F) {
	body, _ := stripemock.Event(secret, "evt_1", "checkout.session.completed", stripemock.Session("cs_1", "acct_a", "100-500-usd", "paid", "pi_1", 500), time.Now())
	f.Add(body)
	body, _ = stripemock.Event(secret, "evt_2", "charge.refunded", stripemock.Charge("ch_1", "pi_1", 500, 100), time.Now())
	f.Add(body)
	f.Add([]byte(`{"id":"evt_3","type":"checkout.session.completed","api_version":"` + APIVersion + `","data":{"object":[]}}`))
	f.Add([]byte(`{}`))
	s, fe := seller(f, "")
	f.Fuzz(func(t *testing.T, payload []byte) {
		before := len(fe.grants)
		signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret})
		_ = s.Handle(context.Background(), signed.Payload, signed.Header)
		if len(fe.grants) > before {
			g := fe.grants[len(fe.grants)-1]
			if !(g.Pack == "100-500-usd" && g.Credits == 100 && g.Paid == 500 || g.Pack == "500-2000-usd" && g.Credits == 500 && g.Paid == 2000) || g.Currency != "usd" {
				t.Fatalf("granted %+v", g)
			}
		}
	})
}
