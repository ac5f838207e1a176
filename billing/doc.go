// Package billing sells Credits through Stripe Checkout: the operator's
// credit packs, a Checkout Session per purchase (stripe-go), and the
// webhook that grants a paid session's Credits through the engine, once,
// and revokes a refunded share. The engine holds the money rules
// (engine/billing.go); this package is the adapter to Stripe's wire
// format and knows no HTTP routing.
package billing
