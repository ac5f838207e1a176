package port

import (
	"context"
	"net/netip"
)

// WebhookSender posts one signed delivery and returns the receiver's
// status; an answer outside 2xx is an error.
type WebhookSender interface {
	Send(ctx context.Context, url string, headers map[string]string, body []byte) (int, error)
	// Allowed says whether a delivery may go to ip: the sender owns the
	// address policy, checked on a literal address at create and on every
	// dial.
	Allowed(ip netip.Addr) bool
}
