package billing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v84"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/service"
)

// APIVersion is the Stripe API version this code speaks: the one
// stripe-go v84 pins. Its webhook check refuses events of another
// version, so the operator's webhook endpoint must send this one.
const APIVersion = stripe.APIVersion

// Config configures selling Credits.
type Config struct {
	// SecretKey and WebhookSecret are Stripe's (APPRUN_STRIPE_SECRET_KEY,
	// APPRUN_STRIPE_WEBHOOK_SECRET); without a secret key nothing is sold.
	SecretKey, WebhookSecret string
	// APIBase replaces https://api.stripe.com (tests: stripe-mock).
	APIBase string
	Packs   []Pack
	// SiteURL is where Checkout sends the buyer back (the website's
	// Credits page).
	SiteURL string
	Logger  *slog.Logger
	// Now is the clock (tests move it); time.Now when nil.
	Now func() time.Time
}

// Engine is what billing needs of the domain.
type Engine interface {
	GrantPurchase(ctx context.Context, p service.Purchase) (bool, error)
	RevokeRefunded(ctx context.Context, paymentIntent string, refunded int64) (int64, error)
	DisputePurchase(ctx context.Context, paymentIntent, id string, amount int64) (taken, owed int64, err error)
	CloseDispute(ctx context.Context, paymentIntent, id string, amount int64, won bool) (int64, error)
	RecordUnmatched(ctx context.Context, u service.Unmatched) error
	// Purchased reports whether a Checkout Session was paid and granted.
	Purchased(ctx context.Context, ref string) (bool, error)
}

// Seller is what the surfaces (API, website) need of the seller.
type Seller interface {
	Selling() bool
	Packs() []Pack
	Checkout(ctx context.Context, accountID, packID string) (Session, error)
	Handle(ctx context.Context, payload []byte, signature string) error
}

// Stripe sells the packs through Stripe Checkout.
type Stripe struct {
	cfg    Config
	client *stripe.Client
	eng    Engine
	open   *checkouts
}

// The errors it answers are the domain's (engine.Error), mapped by the
// edge like any other: credits_not_sold (no Stripe here), invalid_input
// (no such pack), payment_provider_error (Stripe did not create the
// session: nothing was charged), rate_limited (CheckoutsPerHour),
// invalid_signature (a webhook that does not verify).
func notSelling() error {
	return engine.Errorf(engine.CodeCreditsNotSold, "this server does not sell Credits; its operator adds them (apprun admin credits grant)")
}

// New builds the seller. It fails loudly on half a configuration.
func New(cfg Config, eng Engine) (*Stripe, error) {
	switch {
	case cfg.SecretKey == "" && cfg.WebhookSecret == "":
		return &Stripe{cfg: cfg, eng: eng}, nil // not selling
	case cfg.SecretKey == "" || cfg.WebhookSecret == "":
		return nil, errors.New("billing: set both APPRUN_STRIPE_SECRET_KEY and APPRUN_STRIPE_WEBHOOK_SECRET, or neither")
	case len(cfg.Packs) == 0:
		return nil, errors.New("billing: Stripe is configured but APPRUN_CREDIT_PACKS lists no pack to sell")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	backendCfg := &stripe.BackendConfig{HTTPClient: &http.Client{Timeout: 20 * time.Second},
		LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull}, MaxNetworkRetries: stripe.Int64(2)}
	if cfg.APIBase != "" {
		backendCfg.URL = stripe.String(cfg.APIBase)
	}
	backends := &stripe.Backends{
		API:     stripe.GetBackendWithConfig(stripe.APIBackend, backendCfg),
		Connect: stripe.GetBackendWithConfig(stripe.ConnectBackend, backendCfg),
		Uploads: stripe.GetBackendWithConfig(stripe.UploadsBackend, backendCfg),
	}
	return &Stripe{cfg: cfg, eng: eng, client: stripe.NewClient(cfg.SecretKey, stripe.WithBackends(backends)), open: newCheckouts()}, nil
}

func (s *Stripe) now() time.Time {
	if s.cfg.Now == nil {
		return time.Now()
	}
	return s.cfg.Now()
}

// Selling reports whether Credits are sold here.
func (s *Stripe) Selling() bool { return s != nil && s.client != nil }

// Packs are the packs on sale (none when not selling).
func (s *Stripe) Packs() []Pack {
	if !s.Selling() {
		return []Pack{}
	}
	return s.cfg.Packs
}

func (s *Stripe) pack(id string) (Pack, bool) {
	for _, p := range s.cfg.Packs {
		if p.ID == id {
			return p, true
		}
	}
	return Pack{}, false
}

// Session is a Checkout Session to send the buyer to.
type Session struct {
	ID  string `json:"session_id"`
	URL string `json:"url"`
}

// Checkout gives the account's open Checkout Session for the pack again,
// or creates one (checkouts.go says when, and how many).
func (s *Stripe) Checkout(ctx context.Context, accountID, packID string) (Session, error) {
	if !s.Selling() {
		return Session{}, notSelling()
	}
	p, ok := s.pack(packID)
	if !ok {
		ids := make([]string, len(s.cfg.Packs))
		for i, p := range s.cfg.Packs {
			ids[i] = p.ID
		}
		return Session{}, engine.Errorf(engine.CodeInvalidInput, "pack: no pack %q (on sale: %s)", packID, strings.Join(ids, ", "))
	}
	a, err := s.open.acquire(ctx, accountID, s.now())
	if err != nil {
		return Session{}, engine.Errorf(engine.CodePaymentProvider, "another checkout of this account was still waiting for Stripe when the request ended; nothing was charged; retry")
	}
	defer s.open.release(a, true)
	now := s.now()
	if open, ok := s.open.reusable(a, p.ID, now); ok {
		paid, err := s.eng.Purchased(ctx, open.ID)
		if err != nil {
			return Session{}, err
		}
		if !paid {
			return open, nil
		}
		s.open.forget(accountID, open.ID)
	}
	if wait := s.open.wait(a, now); wait > 0 {
		return Session{}, checkoutsLimited(wait)
	}
	s.open.count(a, now)
	cs, err := s.create(ctx, accountID, p, now.Add(SessionLife))
	if err != nil {
		return Session{}, err
	}
	s.open.remember(a, openSession{Session: cs.Session, pack: p.ID, expires: time.Unix(cs.expires, 0)})
	return cs.Session, nil
}

// created is a new session and Stripe's expires_at for it.
type created struct {
	Session
	expires int64
}

// create makes a Checkout Session in payment mode for one pack, naming
// the account (client_reference_id) and the pack (metadata), that
// expires at expires.
func (s *Stripe) create(ctx context.Context, accountID string, p Pack, expires time.Time) (created, error) {
	meta := map[string]string{"apprun_account": accountID, "apprun_pack": p.ID, "apprun_credits": strconv.FormatInt(p.Credits, 10)}
	params := &stripe.CheckoutSessionCreateParams{
		Mode:              stripe.String(string(stripe.CheckoutSessionModePayment)),
		ExpiresAt:         stripe.Int64(expires.Unix()),
		ClientReferenceID: stripe.String(accountID),
		Metadata:          meta,
		PaymentIntentData: &stripe.CheckoutSessionCreatePaymentIntentDataParams{Metadata: meta},
		SuccessURL:        stripe.String(s.cfg.SiteURL + "/credits?purchase=complete"),
		CancelURL:         stripe.String(s.cfg.SiteURL + "/credits?purchase=canceled"),
		LineItems: []*stripe.CheckoutSessionCreateLineItemParams{{
			Quantity: stripe.Int64(1),
			PriceData: &stripe.CheckoutSessionCreateLineItemPriceDataParams{
				Currency:    stripe.String(p.Currency),
				UnitAmount:  stripe.Int64(p.Price),
				ProductData: &stripe.CheckoutSessionCreateLineItemPriceDataProductDataParams{Name: stripe.String(fmt.Sprintf("%d apprun Credits", p.Credits))},
			},
		}},
	}
	cs, err := s.client.V1CheckoutSessions.Create(ctx, params)
	if err != nil {
		s.cfg.Logger.Warn("stripe: checkout session not created", "account", accountID, "pack", p.ID, "err", err)
		return created{}, engine.Errorf(engine.CodePaymentProvider, "Stripe did not create the checkout session; nothing was charged; retry")
	}
	return created{Session: Session{ID: cs.ID, URL: cs.URL}, expires: cs.ExpiresAt}, nil
}

// Handle verifies a webhook delivery and applies it. It returns nil for
// every event it verified (applied, or kept as unmatched, or of a type it
// does not act on), invalid_signature for one it could not verify, and an
// error for a store it could not write (Stripe then delivers again).
func (s *Stripe) Handle(ctx context.Context, payload []byte, signature string) error {
	if !s.Selling() {
		return notSelling()
	}
	ev, err := s.verify(payload, signature)
	if err != nil {
		return err
	}
	if ev.Data == nil {
		return nil
	}
	switch ev.Type {
	case "checkout.session.completed", "checkout.session.async_payment_succeeded":
		var cs stripe.CheckoutSession
		if err := json.Unmarshal(ev.Data.Raw, &cs); err != nil {
			return s.unmatched(ctx, ev, cs.ID, "unreadable session", err.Error())
		}
		s.open.forget(cs.ClientReferenceID, cs.ID) // complete: never given again
		if cs.PaymentStatus != stripe.CheckoutSessionPaymentStatusPaid {
			return nil // paid later: async_payment_succeeded grants it
		}
		return s.grant(ctx, ev, cs)
	case "charge.refunded":
		var ch stripe.Charge
		if err := json.Unmarshal(ev.Data.Raw, &ch); err != nil || ch.PaymentIntent == nil {
			return s.unmatched(ctx, ev, ch.ID, "refund of an unknown payment", "no payment intent")
		}
		n, err := s.eng.RevokeRefunded(ctx, ch.PaymentIntent.ID, ch.AmountRefunded)
		if errors.Is(err, service.ErrNoPurchase) {
			return s.unmatched(ctx, ev, ch.ID, "refund of an unknown payment", ch.PaymentIntent.ID)
		}
		if errors.Is(err, service.ErrRefundHeld) {
			// Its purchase's notice has not come: the purchase grants the net.
			s.cfg.Logger.Info("stripe: refund held until its purchase's notice comes", "charge", ch.ID, "payment_intent", ch.PaymentIntent.ID,
				"refunded", ch.AmountRefunded)
			return nil
		}
		if err == nil && n > 0 {
			s.cfg.Logger.Info("stripe: refund revoked Credits", "charge", ch.ID, "payment_intent", ch.PaymentIntent.ID, "credits", n)
		}
		return err
	case "charge.dispute.created", "charge.dispute.closed":
		var d stripe.Dispute
		if err := json.Unmarshal(ev.Data.Raw, &d); err != nil || d.PaymentIntent == nil {
			return s.unmatched(ctx, ev, d.ID, "dispute of an unknown payment", "no payment intent")
		}
		return s.dispute(ctx, ev, d)
	}
	return nil
}

// dispute applies a dispute's opening, or its close: won gives back what
// it took.
func (s *Stripe) dispute(ctx context.Context, ev stripe.Event, d stripe.Dispute) error {
	pi := d.PaymentIntent.ID
	var err error
	if ev.Type == "charge.dispute.created" {
		var taken, owed int64
		taken, owed, err = s.eng.DisputePurchase(ctx, pi, d.ID, d.Amount)
		if err == nil && taken+owed > 0 {
			s.cfg.Logger.Warn("stripe: payment disputed; its Credits taken back", "dispute", d.ID, "payment_intent", pi, "credits", taken, "owed", owed)
		}
	} else {
		var back int64
		back, err = s.eng.CloseDispute(ctx, pi, d.ID, d.Amount, d.Status == stripe.DisputeStatusWon)
		if err == nil {
			s.cfg.Logger.Info("stripe: dispute closed", "dispute", d.ID, "payment_intent", pi, "status", d.Status, "credits_back", back)
		}
	}
	if errors.Is(err, service.ErrNoPurchase) {
		return s.unmatched(ctx, ev, d.ID, "dispute of an unknown payment", pi)
	}
	if errors.Is(err, service.ErrDisputeHeld) {
		// Its purchase's notice has not come: the purchase applies it.
		s.cfg.Logger.Warn("stripe: dispute held until its purchase's notice comes", "dispute", d.ID, "payment_intent", pi,
			"event", ev.Type, "status", d.Status)
		return nil
	}
	return err
}

func (s *Stripe) grant(ctx context.Context, ev stripe.Event, cs stripe.CheckoutSession) error {
	account, packID := cs.ClientReferenceID, cs.Metadata["apprun_pack"]
	p, ok := s.pack(packID)
	if !ok {
		return s.unmatched(ctx, ev, cs.ID, "unknown pack", packID)
	}
	if cs.AmountTotal != p.Price || !strings.EqualFold(string(cs.Currency), p.Currency) {
		// The session was made at the pack's price, with no tax, discount
		// or currency choice: anything else paid is held, not granted.
		return s.unmatched(ctx, ev, cs.ID, "paid amount is not the pack's price",
			fmt.Sprintf("paid %d %s for pack %s, which costs %d %s", cs.AmountTotal, cs.Currency, p.ID, p.Price, p.Currency))
	}
	purchase := service.Purchase{AccountID: account, Ref: cs.ID, Pack: p.ID, Credits: p.Credits, Paid: cs.AmountTotal, Currency: p.Currency}
	if cs.PaymentIntent != nil {
		purchase.PaymentIntent = cs.PaymentIntent.ID
	}
	granted, err := s.eng.GrantPurchase(ctx, purchase)
	switch code := engine.ErrorCode(err); {
	case err == nil:
		if granted {
			s.cfg.Logger.Info("stripe: credits purchased", "account", account, "session", cs.ID, "pack", p.ID, "credits", p.Credits)
		}
		return nil
	case code == engine.CodeAccountNotFound || code == engine.CodeInvalidInput:
		return s.unmatched(ctx, ev, cs.ID, "unknown account", account)
	default:
		return err
	}
}

// unmatched logs a verified notice nobody can be granted and keeps it for
// the operator; Stripe is answered 200 so it stops retrying.
func (s *Stripe) unmatched(ctx context.Context, ev stripe.Event, ref, reason, detail string) error {
	s.cfg.Logger.Warn("stripe: a paid notice matches nothing; kept for the operator", "event", ev.ID, "ref", ref, "reason", reason, "detail", detail)
	return s.eng.RecordUnmatched(ctx, service.Unmatched{EventID: ev.ID, Ref: ref, Reason: reason, Detail: detail})
}
