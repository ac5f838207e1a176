package billing_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apprun/apprun/audit"
	. "github.com/apprun/apprun/node/nodetest"

	"github.com/apprun/apprun/billing"
	"github.com/apprun/apprun/billing/stripemock"
	"github.com/apprun/apprun/engine"
	"github.com/chromedp/chromedp"
)

// A pack bought through Checkout: the session is made on stripe-mock,
// the webhook grants it once whatever the deliveries (ten at once, again
// after a restart), a bad signature or an old one changes nothing, an
// asynchronous payment grants when it succeeds, a refund revokes its
// share, and the statement and the audit show it all.
func TestBuyingCreditsGrantsEachPaymentOnce(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits), WithStripe(t))
	a := h.Account(0)
	packs := h.Do("GET", "/api/v1/billing/packs", a.Key, nil).JSON(t)
	if packs["selling"] != true || len(packs["data"].([]any)) != 2 {
		t.Fatalf("packs %v", packs)
	}
	co := h.Do("POST", "/api/v1/billing/checkout", a.Key, map[string]any{"pack": "100-500-usd"})
	session := co.JSON(t)
	if co.Status != 201 || !strings.HasPrefix(session["session_id"].(string), "cs_") || !strings.HasPrefix(session["url"].(string), "https://") {
		t.Fatalf("checkout: %d %s", co.Status, co.Body)
	}
	if again := h.Do("POST", "/api/v1/billing/checkout", a.Key, map[string]any{"pack": "100-500-usd"}).JSON(t); again["session_id"] != session["session_id"] {
		t.Fatalf("a second checkout of the pack: %v, want the open session %v", again, session)
	}
	if r := h.Do("POST", "/api/v1/billing/checkout", a.Key, map[string]any{"pack": "1-1-usd"}); r.Status != 422 || r.ErrorCode(t) != "invalid_input" {
		t.Fatalf("an unknown pack: %d %s", r.Status, r.Body)
	}
	// The session id stripe-mock gives is a fixture shared by every
	// session; the events below name sessions of their own.
	now := time.Now()
	paid := stripemock.Session("cs_test_paid1", a.ID, "100-500-usd", "paid", "pi_paid1", 500)
	if r := h.Deliver("evt_sig", "checkout.session.completed", paid, "whsec_other", now); r.Status != 400 || r.ErrorCode(t) != "invalid_signature" {
		t.Fatalf("a bad signature: %d %s", r.Status, r.Body)
	}
	if r := h.Deliver("evt_old", "checkout.session.completed", paid, Whsec, now.Add(-10*time.Minute)); r.Status != 400 {
		t.Fatalf("an old signature: %d %s", r.Status, r.Body)
	}
	if r := h.Deliver("evt_ahead", "checkout.session.completed", paid, Whsec, now.Add(24*time.Hour)); r.Status != 400 || r.ErrorCode(t) != "invalid_signature" {
		t.Fatalf("a signature dated a day ahead: %d %s", r.Status, r.Body)
	}
	if bal, _ := h.Balance(a); bal != 0 {
		t.Fatalf("balance %d after refused deliveries, want 0", bal)
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := h.Deliver("evt_paid1", "checkout.session.completed", paid, Whsec, now); r.Status != 200 {
				t.Errorf("a delivery: %d %s", r.Status, r.Body)
			}
		}()
	}
	wg.Wait()
	if bal, _ := h.Balance(a); bal != 100 {
		t.Fatalf("balance %d after ten deliveries of one payment, want 100", bal)
	}
	// A restart between two deliveries: still once.
	h.Restart()
	if r := h.Deliver("evt_paid1", "checkout.session.completed", paid, Whsec, time.Now()); r.Status != 200 {
		t.Fatalf("a delivery after a restart: %d", r.Status)
	}
	if bal, _ := h.Balance(a); bal != 100 {
		t.Fatalf("balance %d after a redelivery across a restart, want 100", bal)
	}
	// An asynchronous payment: pending first, granted when it succeeds.
	pending := stripemock.Session("cs_test_async1", a.ID, "500-2000-usd", "unpaid", "pi_async1", 2000)
	h.Deliver("evt_async_pending", "checkout.session.completed", pending, Whsec, time.Now())
	if bal, _ := h.Balance(a); bal != 100 {
		t.Fatalf("balance %d after a pending payment, want 100", bal)
	}
	pending["payment_status"] = "paid"
	for range 2 {
		if r := h.Deliver("evt_async_ok", "checkout.session.async_payment_succeeded", pending, Whsec, time.Now()); r.Status != 200 {
			t.Fatalf("async payment succeeded: %d %s", r.Status, r.Body)
		}
	}
	if bal, _ := h.Balance(a); bal != 600 {
		t.Fatalf("balance %d after the async payment succeeded (twice), want 600", bal)
	}
	// A refund of half the first payment revokes half its Credits, once.
	for range 2 {
		h.Deliver("evt_refund1", "charge.refunded", stripemock.Charge("ch_paid1", "pi_paid1", 500, 250), Whsec, time.Now())
	}
	if bal, _ := h.Balance(a); bal != 550 {
		t.Fatalf("balance %d after a half refund, want 550", bal)
	}
	// Unknown accounts and packs are answered 200 and kept for the operator.
	h.Deliver("evt_ghost", "checkout.session.completed", stripemock.Session("cs_test_ghost", "acct_nobodyhere", "100-500-usd", "paid", "pi_ghost", 500), Whsec, time.Now())
	h.Deliver("evt_oldpack", "checkout.session.completed", stripemock.Session("cs_test_oldpack", a.ID, "5-5-usd", "paid", "pi_oldpack", 5), Whsec, time.Now())
	un := h.Do("GET", "/admin/v1/billing/unmatched", AdminToken, nil).JSON(t)["data"].([]any)
	if len(un) != 2 || !strings.Contains(fmt.Sprint(un), "unknown account") || !strings.Contains(fmt.Sprint(un), "unknown pack") {
		t.Fatalf("unmatched %v", un)
	}
	// The statement names each payment.
	lines := fmt.Sprint(h.Do("GET", "/api/v1/account/ledger", a.Key, nil).JSON(t)["data"])
	for _, want := range []string{"type:purchase", "reference:cs_test_paid1", "payment_intent:pi_paid1", "reference:cs_test_async1", "type:revocation", "amount:-50"} {
		if !strings.Contains(lines, want) {
			t.Fatalf("the statement lacks %q: %s", want, lines)
		}
	}
	// The audit replays the log: two payments, one revocation, no violation.
	h.Stop()
	var out bytes.Buffer
	if err := audit.Run(context.Background(), audit.Options{DataDir: h.Dir}, &out); err != nil || !strings.Contains(out.String(), "credits purchased 600 in 2 payments, revoked on refunds 50") {
		t.Fatalf("audit: %v\n%s", err, out.String())
	}
}

// Checkout over the API and the website: a pack's open session is given
// again, and an account opens at most billing.CheckoutsPerHour new ones
// an hour, whichever surface asks. Past that: 429 rate_limited with
// Retry-After on the API, a notice on the Credits page, and nothing made
// at Stripe.
func TestCheckoutsAreReusedAndLimitedPerAccount(t *testing.T) {
	t.Parallel()
	mock := stripemock.StartCounted(t)
	h := Start(t, WithLimits(NoLimits), WithStripeAt(t, mock.URL))
	b := h.Browser(t)
	b.SignUp("many-checkouts@example.com")
	key := b.CreateKey("buyer")
	acct := AccountOfSession(t, h, b)
	checkout := func(pack string) Response {
		return h.Do("POST", "/api/v1/billing/checkout", key, map[string]any{"pack": pack})
	}
	var last string
	for i := range billing.CheckoutsPerHour {
		r := checkout("100-500-usd")
		if r.Status != 201 {
			t.Fatalf("checkout %d: %d %s", i+1, r.Status, r.Body)
		}
		last = r.JSON(t)["session_id"].(string)
		if i < billing.CheckoutsPerHour-1 { // completed (paid later): the next is a new one
			if d := h.Deliver("evt_"+last, "checkout.session.completed", stripemock.Session(last, acct, "100-500-usd", "unpaid", "pi_"+last, 500), Whsec, time.Now()); d.Status != 200 {
				t.Fatalf("webhook: %d %s", d.Status, d.Body)
			}
		}
	}
	made := len(mock.Sessions())
	if made != billing.CheckoutsPerHour {
		t.Fatalf("%d sessions made at Stripe, want %d", made, billing.CheckoutsPerHour)
	}
	r := checkout("500-2000-usd")
	if ra, _ := strconv.Atoi(r.Header.Get("Retry-After")); r.Status != 429 || r.ErrorCode(t) != "rate_limited" || ra < 3500 || ra > 3601 {
		t.Fatalf("checkout %d within the hour: %d Retry-After %q %s, want 429 rate_limited for about an hour", billing.CheckoutsPerHour+1, r.Status, r.Header.Get("Retry-After"), r.Body)
	}
	if again := checkout("100-500-usd"); again.Status != 201 || again.JSON(t)["session_id"] != last {
		t.Fatalf("the open session while limited: %d %s, want %s again", again.Status, again.Body, last)
	}
	if p := b.Post("/credits/buy", url.Values{"pack": {"500-2000-usd"}}); p.Location != "/credits" ||
		!strings.Contains(b.Get("/credits").Body, fmt.Sprintf("You opened %d checkouts in the last hour", billing.CheckoutsPerHour)) {
		t.Fatalf("Buy when limited: %d to %q, want the Credits page saying why", p.Status, p.Location)
	}
	if n := len(mock.Sessions()); n != made {
		t.Fatalf("%d sessions made at Stripe after the limit, want %d", n, made)
	}
}

// Without Stripe configured nothing is sold, and the API says how Credits
// are added instead.
func TestWithoutStripeNothingIsSold(t *testing.T) {
	t.Parallel()
	h := Start(t)
	a := h.Account(0)
	packs := h.Do("GET", "/api/v1/billing/packs", a.Key, nil).JSON(t)
	if packs["selling"] != false || len(packs["data"].([]any)) != 0 || !strings.Contains(packs["how_to_add"].(string), "apprun admin credits grant") {
		t.Fatalf("packs without Stripe: %v", packs)
	}
	if r := h.Do("POST", "/api/v1/billing/checkout", a.Key, map[string]any{"pack": "100-500-usd"}); r.Status != 404 || r.ErrorCode(t) != "credits_not_sold" {
		t.Fatalf("checkout without Stripe: %d %s", r.Status, r.Body)
	}
	if r := h.Deliver("evt_1", "checkout.session.completed", stripemock.Session("cs_1", a.ID, "100-500-usd", "paid", "pi_1", 500), Whsec, time.Now()); r.Status != 404 {
		t.Fatalf("a webhook without Stripe: %d %s", r.Status, r.Body)
	}
}

// The Credits page sells the packs: Buy sends the buyer to Stripe's page
// (303), the return says the Credits come when Stripe confirms, the
// webhook adds them, and the statement (and its CSV) names the payment.
// Without Stripe the page says how Credits are added instead.
func TestTheCreditsPageSellsPacks(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits), WithStripe(t))
	b := h.Browser(t)
	b.SignUp("buyer@example.com")
	credits := b.Get("/credits").Body
	if !strings.Contains(credits, "<h2>Buy Credits</h2>") || !strings.Contains(credits, `value="500-2000-usd"`) ||
		!strings.Contains(credits, "20.00 USD") || strings.Contains(credits, "apprun admin credits grant") {
		t.Fatal("the Credits page does not offer the packs")
	}
	buy := b.Post("/credits/buy", url.Values{"pack": {"100-500-usd"}})
	if buy.Status != http.StatusSeeOther || !strings.HasPrefix(buy.Location, "https://checkout.stripe.com/") {
		t.Fatalf("Buy: %d to %q, want 303 to Stripe's checkout", buy.Status, buy.Location)
	}
	if p := b.Post("/credits/buy", url.Values{"pack": {"3-3-usd"}}); p.Location != "/credits" || !strings.Contains(b.Get("/credits").Body, "no longer on sale") {
		t.Fatal("an old pack is not refused with a reason")
	}
	if !strings.Contains(b.Get("/credits?purchase=complete").Body, "as soon as Stripe confirms the payment") {
		t.Fatal("the return from Stripe does not say when the Credits come")
	}
	acct := AccountOfSession(t, h, b)
	if r := h.Deliver("evt_web1", "checkout.session.completed", stripemock.Session("cs_test_web1", acct, "500-2000-usd", "paid", "pi_web1", 2000), Whsec, time.Now()); r.Status != 200 {
		t.Fatalf("webhook: %d %s", r.Status, r.Body)
	}
	page := b.Get("/credits").Body
	if !strings.Contains(page, `id="balance">500 Credits<`) || !strings.Contains(page, "Purchase") || !strings.Contains(page, "<code>cs_test_web1</code>") {
		t.Fatal("the purchase is not on the Credits page")
	}
	csv := b.Get("/credits/statement.csv").Body
	if !strings.Contains(csv, ",reference\n") || !strings.Contains(csv, "purchase,500,500,,,cs_test_web1") {
		t.Fatalf("the CSV does not name the payment:\n%s", csv)
	}

	plain := Start(t)
	pb := plain.Browser(t)
	pb.SignUp("nostripe@example.com")
	if page := pb.Get("/credits").Body; strings.Contains(page, "Buy Credits") || !strings.Contains(page, "Buying Credits here is not turned on") || strings.Contains(page, "apprun admin") {
		t.Fatal("without Stripe the Credits page should say how Credits are added")
	}
	if p := pb.Post("/credits/buy", url.Values{"pack": {"100-500-usd"}}); p.Location != "/credits" {
		t.Fatalf("Buy without Stripe: %d %q", p.Status, p.Location)
	}
}

// In Chromium: a signed-in user buys a pack from the Credits page and
// lands on Stripe's checkout page (here a stand-in: Chromium resolves
// checkout.stripe.com to a local TLS server, since the real page cannot
// be reached from the tests), then Stripe's webhook arrives and the
// Credits page, reloaded, shows the new balance and the purchase.
func TestBrowserBuysAPackUpToStripeAndSeesTheCredits(t *testing.T) {
	t.Parallel() // a browser waits on pages much of its time: it runs beside the other parallel tests
	bin := ChromiumOrSkip(t)
	stripePage := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>Stripe Checkout</title><h1 id="stripe">Stripe Checkout (stand-in)</h1>`)
	}))
	defer stripePage.Close()
	h := Start(t, WithLimits(NoLimits), WithStripe(t))
	ctx := StartChromium(t, bin, 1280, 900, 60*time.Second,
		chromedp.Flag("host-resolver-rules", "MAP checkout.stripe.com:443 "+strings.TrimPrefix(stripePage.URL, "https://")),
		chromedp.Flag("ignore-certificate-errors", true))
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	do("sign up",
		chromedp.Navigate(h.Srv.URL+"/signup"),
		chromedp.WaitVisible(css("#email")),
		chromedp.SendKeys(css("#email"), "chromium-buyer@example.com"),
		chromedp.SendKeys(css("#password"), WebPassword),
		chromedp.SendKeys(css("#password_again"), WebPassword),
		chromedp.Submit(css("#email")),
		chromedp.WaitVisible(css(".apps")),
	)
	do("buy a pack",
		chromedp.Navigate(h.Srv.URL+"/credits"),
		chromedp.WaitVisible(css(`form[action="/credits/buy"] button`)),
		chromedp.Click(css(`input[value="100-500-usd"] + button`)),
		chromedp.WaitVisible(css("#stripe")),
	)
	at, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || !strings.HasPrefix(at, "https://checkout.stripe.com/") {
		t.Fatalf("after Buy the browser is at %q (%v), want Stripe's checkout", at, err)
	}
	// Stripe confirms the payment to the webhook: the account is the one
	// the browser's key belongs to.
	do("make a key",
		chromedp.Navigate(h.Srv.URL+"/settings/keys"),
		chromedp.WaitVisible(css(`input[name="name"]`)),
		chromedp.SendKeys(css(`input[name="name"]`), "buyer"),
		chromedp.Submit(css(`input[name="name"]`)),
		chromedp.WaitVisible(css("#new-key")),
	)
	key, err := chromedp.Run(ctx, chromedp.Text(css("#new-key")))
	if err != nil {
		t.Fatal(err)
	}
	k, err := h.Node.Reads().KeyByHash(engine.HashKey(strings.TrimSpace(key)))
	if err != nil {
		t.Fatal(err)
	}
	if r := h.Deliver("evt_chromium", "checkout.session.completed", stripemock.Session("cs_test_chromium", k.AccountID, "100-500-usd", "paid", "pi_chromium", 500), Whsec, time.Now()); r.Status != 200 {
		t.Fatalf("webhook: %d %s", r.Status, r.Body)
	}
	do("back on the Credits page",
		chromedp.Navigate(h.Srv.URL+"/credits?purchase=complete"),
		chromedp.WaitVisible(css("#balance")),
	)
	balance, err := chromedp.Run(ctx, chromedp.Text(css("#balance")))
	if err != nil || strings.TrimSpace(balance) != "100 Credits" {
		t.Fatalf("balance on the page %q (%v), want 100 Credits", balance, err)
	}
	statement, err := chromedp.Run(ctx, chromedp.Text(css("table")))
	if err != nil || !strings.Contains(statement, "cs_test_chromium") {
		t.Fatalf("the statement %q does not name the purchase (%v)", statement, err)
	}
}

// Stripe's events out of order and disputes, through the webhook: a
// refund before its purchase grants the net; a dispute takes back its
// Credits to a zero balance and owes the rest, a won one gives them
// back; the statement reconciles and the audit shows the debt.
func TestRefundsBeforePurchasesAndDisputesEndExact(t *testing.T) {
	t.Parallel()
	h, a, deliver, balance := stripeAccount(t)
	// 500 of the 2,000 cents refunded before the completion: 375 of 500 Credits.
	deliver("evt_early_refund", "charge.refunded", stripemock.Charge("ch_e", "pi_e", 2000, 500))
	balance(0, "a refund before its purchase")
	for range 2 {
		deliver("evt_late_paid", "checkout.session.completed", stripemock.Session("cs_test_e", a.ID, "500-2000-usd", "paid", "pi_e", 2000))
	}
	balance(375, "the purchase of a payment a quarter refunded")
	// A second purchase, 100 Credits, spent down to 30, then disputed whole.
	deliver("evt_paid_d", "checkout.session.completed", stripemock.Session("cs_test_d", a.ID, "100-500-usd", "paid", "pi_d", 500))
	if r := h.Do("POST", "/admin/v1/accounts/"+a.ID+"/adjustments", AdminToken, map[string]any{"amount": -445, "reason": "spent, for the test"}); r.Status != 200 {
		t.Fatalf("adjust: %d %s", r.Status, r.Body)
	}
	balance(30, "spending")
	for range 2 {
		deliver("evt_dispute", "charge.dispute.created", stripemock.Dispute("dp_1", "pi_d", 500, "needs_response"))
	}
	balance(0, "a dispute of 100 Credits with 30 left")
	st := h.Do("GET", "/api/v1/account/ledger?limit=100", a.Key, nil).JSON(t)
	Reconciles(t, "after the dispute", st)
	if lines := fmt.Sprint(st["data"]); !strings.Contains(lines, "type:dispute") || !strings.Contains(lines, "owed:70") || !strings.Contains(lines, "withheld") {
		t.Fatalf("the statement: %s", lines)
	}
	h.Stop()
	var out bytes.Buffer
	if err := audit.Run(context.Background(), audit.Options{DataDir: h.Dir}, &out); err != nil || !strings.Contains(out.String(), "credits taken by disputes 30, given back on disputes won 0, owed on disputes 70") {
		t.Fatalf("audit with an open dispute: %v\n%s", err, out.String())
	}
	h.Boot()
	h.WaitReady()
	deliver("evt_dispute_won", "charge.dispute.closed", stripemock.Dispute("dp_1", "pi_d", 500, "won"))
	balance(30, "the dispute was won")
	Reconciles(t, "after the dispute was won", h.Do("GET", "/api/v1/account/ledger?limit=100", a.Key, nil).JSON(t))
	h.Stop()
	out.Reset()
	if err := audit.Run(context.Background(), audit.Options{DataDir: h.Dir}, &out); err != nil || !strings.Contains(out.String(), "given back on disputes won 30, owed on disputes 0") {
		t.Fatalf("audit after the dispute was won: %v\n%s", err, out.String())
	}
}

// A dispute whose notice comes before its purchase's is kept on the
// payment and applied in the purchase's own write: the purchase's line,
// then the dispute's; a dispute won before its purchase came takes
// nothing, one lost takes its share. Repeated notices change nothing,
// and the audit agrees.
func TestADisputeBeforeItsPurchaseIsAppliedWithIt(t *testing.T) {
	t.Parallel()
	h, a, deliver, balance := stripeAccount(t)
	// Half of a 2,000-cent payment disputed before its purchase: 250 of
	// its 500 Credits taken in the purchase's write, given back when won.
	for range 2 {
		deliver("evt_early_dispute", "charge.dispute.created", stripemock.Dispute("dp_e", "pi_ed", 1000, "needs_response"))
	}
	balance(0, "a dispute before its purchase")
	for range 2 {
		deliver("evt_paid_ed", "checkout.session.completed", stripemock.Session("cs_test_ed", a.ID, "500-2000-usd", "paid", "pi_ed", 2000))
	}
	balance(250, "the purchase of a payment half disputed")
	st := h.Do("GET", "/api/v1/account/ledger?limit=100", a.Key, nil).JSON(t)
	Reconciles(t, "after the early dispute", st)
	lines := st["data"].([]any)
	if len(lines) != 2 || lines[0].(map[string]any)["type"] != "dispute" || lines[0].(map[string]any)["amount"] != float64(-250) ||
		!strings.Contains(fmt.Sprint(lines[0]), "before its purchase's notice came") || lines[1].(map[string]any)["amount"] != float64(500) {
		t.Fatalf("the statement: %v", lines)
	}
	deliver("evt_early_dispute_won", "charge.dispute.closed", stripemock.Dispute("dp_e", "pi_ed", 1000, "won"))
	balance(500, "the early dispute was won")

	// Disputed whole and lost, both before the purchase: its Credits are
	// taken as it is granted. Won before the purchase: nothing is taken.
	deliver("evt_dispute_l", "charge.dispute.created", stripemock.Dispute("dp_l", "pi_l", 500, "needs_response"))
	deliver("evt_dispute_l_lost", "charge.dispute.closed", stripemock.Dispute("dp_l", "pi_l", 500, "lost"))
	deliver("evt_paid_l", "checkout.session.completed", stripemock.Session("cs_test_l", a.ID, "100-500-usd", "paid", "pi_l", 500))
	balance(500, "a purchase whose dispute was lost before it came")
	deliver("evt_dispute_w", "charge.dispute.created", stripemock.Dispute("dp_w", "pi_w", 500, "needs_response"))
	deliver("evt_dispute_w_won", "charge.dispute.closed", stripemock.Dispute("dp_w", "pi_w", 500, "won"))
	deliver("evt_paid_w", "checkout.session.completed", stripemock.Session("cs_test_w", a.ID, "100-500-usd", "paid", "pi_w", 500))
	balance(600, "a purchase whose dispute was won before it came")
	Reconciles(t, "after the early disputes", h.Do("GET", "/api/v1/account/ledger?limit=100", a.Key, nil).JSON(t))

	h.Stop()
	var out bytes.Buffer
	if err := audit.Run(context.Background(), audit.Options{DataDir: h.Dir, PublicKey: DevLedgerKey(t, h.Dir)}, &out); err != nil ||
		!strings.Contains(out.String(), "credits taken by disputes 350, given back on disputes won 250, owed on disputes 0") {
		t.Fatalf("audit after the early disputes: %v\n%s", err, out.String())
	}
}

// stripeAccount starts a node that sells through stripe-mock, with an
// account of no Credits, and gives what delivers a Stripe event to it
// (answered 200) and what checks the account's balance.
func stripeAccount(t *testing.T) (h *Harness, a Account, deliver func(id, typ string, obj map[string]any), balance func(want int64, after string)) {
	t.Helper()
	h = Start(t, WithLimits(NoLimits), WithStripe(t))
	a = h.Account(0)
	deliver = func(id, typ string, obj map[string]any) {
		t.Helper()
		if r := h.Deliver(id, typ, obj, Whsec, time.Now()); r.Status != 200 {
			t.Fatalf("%s: %d %s", id, r.Status, r.Body)
		}
	}
	balance = func(want int64, after string) {
		t.Helper()
		if bal, _ := h.Balance(a); bal != want {
			t.Fatalf("balance %d after %s, want %d", bal, after, want)
		}
	}
	return h, a, deliver, balance
}
