// Package webhook sends apprun's signed webhook deliveries over HTTP: the
// engine decides what to send, when and to whom (engine/webhook.go); this
// package posts them through package outbound, whose dial check keeps a
// delivery off loopback, private and every special-purpose address.
package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"time"

	"github.com/apprun/apprun/outbound"
	"github.com/apprun/apprun/port"
)

// Sender posts deliveries. It implements engine.WebhookSender.
type Sender struct {
	allowPrivate bool
	client       *http.Client
}

var _ port.WebhookSender = (*Sender)(nil)

// NewSender makes a Sender; allowPrivate lets it reach loopback and
// private addresses (dev mode and tests).
func NewSender(allowPrivate bool) *Sender {
	return &Sender{allowPrivate: allowPrivate, client: outbound.Client(allowPrivate, 10*time.Second)}
}

// Allowed says whether a delivery may go to ip.
func (s *Sender) Allowed(ip netip.Addr) bool { return s.allowPrivate || outbound.Allowed(ip) }

// Send posts body with headers to target; an answer outside 2xx is a
// failure, returned with its status. A failure to reach the receiver is
// named by its class ("address not allowed", "connection refused",
// "timeout"…): the delivery log shows it to the account, and it must not
// tell them about the network apprun runs in.
func (s *Sender) Send(ctx context.Context, target string, headers map[string]string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return 0, errors.New("invalid URL")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, errors.New(outbound.Describe(err))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("the receiver answered %d", resp.StatusCode)
	}
	return resp.StatusCode, nil
}
