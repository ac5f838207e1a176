package nodetest

import (
	"testing"
	"time"

	"github.com/apprun/apprun/billing"
	"github.com/apprun/apprun/billing/stripemock"
	"github.com/apprun/apprun/node"
)

const Whsec = "whsec_apprun_test"

// WithStripe sells two packs through stripe-mock, Stripe's own mock.
func WithStripe(t *testing.T) Option { return WithStripeAt(t, stripemock.Start(t)) }

// WithStripeAt sells the two packs through the Stripe API at base.
func WithStripeAt(t *testing.T, base string) Option {
	packs, err := billing.ParsePacks("100:500:usd,500:2000:usd")
	if err != nil {
		t.Fatal(err)
	}
	return func(c *node.Config) {
		c.Billing = billing.Config{SecretKey: "sk_test_apprun", WebhookSecret: Whsec, APIBase: base, Packs: packs}
	}
}

// Deliver posts one signed Stripe event to the node's webhook.
func (h *Harness) Deliver(id, typ string, object map[string]any, secret string, at time.Time) Response {
	body, sig := stripemock.Event(secret, id, typ, object, at)
	return h.Do("POST", "/billing/stripe/webhook", "", Raw{string(body), "application/json"}, "Stripe-Signature", sig)
}
