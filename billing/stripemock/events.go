package stripemock

import (
	"encoding/json"
	"time"

	"github.com/stripe/stripe-go/v84"
	"github.com/stripe/stripe-go/v84/webhook"
)

// Event is a Stripe webhook delivery as Stripe sends it: the event's JSON
// (at the API version stripe-go pins) and its Stripe-Signature header,
// signed with secret at the time at by stripe-go's own test helper.
func Event(secret, id, typ string, object map[string]any, at time.Time) (payload []byte, signature string) {
	body, _ := json.Marshal(map[string]any{
		"id": id, "object": "event", "api_version": stripe.APIVersion, "type": typ,
		"created": at.Unix(), "livemode": false, "data": map[string]any{"object": object},
	})
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: at})
	return signed.Payload, signed.Header
}

// Session is a checkout.session object for account and pack.
func Session(id, account, pack, paymentStatus, paymentIntent string, amount int64) map[string]any {
	return map[string]any{"id": id, "object": "checkout.session", "mode": "payment", "client_reference_id": account,
		"metadata": map[string]string{"apprun_account": account, "apprun_pack": pack}, "payment_status": paymentStatus,
		"status": "complete", "amount_total": amount, "currency": "usd", "payment_intent": paymentIntent}
}

// Charge is a charge object with amountRefunded of amount refunded.
func Charge(id, paymentIntent string, amount, amountRefunded int64) map[string]any {
	return map[string]any{"id": id, "object": "charge", "amount": amount, "amount_refunded": amountRefunded,
		"currency": "usd", "payment_intent": paymentIntent, "refunded": amountRefunded >= amount}
}

// Dispute is a charge.dispute.* event's object: a dispute of amount on
// paymentIntent, with status (needs_response, won, lost, …).
func Dispute(id, paymentIntent string, amount int64, status string) map[string]any {
	return map[string]any{"id": id, "object": "dispute", "amount": amount, "currency": "usd", "payment_intent": paymentIntent,
		"charge": "ch_" + paymentIntent, "status": status}
}
