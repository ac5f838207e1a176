// Package webhook sends apprun's signed webhook deliveries over HTTP: the
// engine decides what to send, when and to whom (engine/webhook.go); this
// package owns the HTTP client and the dial check that keeps a delivery
// off loopback and private addresses.
package webhook

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/apprun/apprun/engine"
)

// Sender posts deliveries. It implements engine.WebhookSender.
type Sender struct {
	allowPrivate bool
	client       *http.Client
}

var _ engine.WebhookSender = (*Sender)(nil)

// NewSender makes a Sender; allowPrivate lets it reach loopback and
// private addresses (dev mode and tests).
func NewSender(allowPrivate bool) *Sender {
	s := &Sender{allowPrivate: allowPrivate}
	s.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext:  (&net.Dialer{Timeout: 5 * time.Second, Control: s.dialCheck}).DialContext,
		MaxIdleConns: 32, IdleConnTimeout: time.Minute}, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse // a redirect is an answer, not a delivery
	}}
	return s
}

// Send posts body with headers to target; an answer outside 2xx is a
// failure, returned with its status.
func (s *Sender) Send(ctx context.Context, target string, headers map[string]string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("the receiver answered %d", resp.StatusCode)
	}
	return resp.StatusCode, nil
}

// dialCheck refuses loopback and private addresses when they are not
// allowed, whatever name led there.
func (s *Sender) dialCheck(_, address string, _ syscall.RawConn) error {
	if s.allowPrivate {
		return nil
	}
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !engine.PublicIP(ip) {
		return fmt.Errorf("webhook: %s is not a public address", host)
	}
	return nil
}
