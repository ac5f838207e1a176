// Package billing sells Credits through Stripe Checkout: the operator's
// credit packs, a Checkout Session per purchase (stripe-go; one open per
// account and pack, given again, and a bounded number made an hour:
// checkouts.go), and the webhook that grants a paid session's Credits
// through the engine, once, and revokes a refunded share (its signature
// checked within a window either side of now: signature.go). The engine
// holds the money rules (engine/billing.go); this package is the adapter
// to Stripe's wire format and knows no HTTP routing.
package billing
