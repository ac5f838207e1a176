package stripemock

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// Counted is stripe-mock behind a proxy that keeps the form of every
// Checkout Session create that reached it: how many sessions a test made
// at Stripe, and with what. Refuse makes it answer those creates as
// Stripe answers a request it refuses (400), without passing them on.
type Counted struct {
	// URL is the API base to give the seller.
	URL    string
	Refuse atomic.Bool

	mu    sync.Mutex
	forms []url.Values
}

// StartCounted runs stripe-mock behind a Counted proxy until the test ends.
func StartCounted(t testing.TB) *Counted {
	t.Helper()
	target, err := url.Parse(Start(t))
	if err != nil {
		t.Fatal(err)
	}
	c := &Counted{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/checkout/sessions" {
			body, _ := io.ReadAll(r.Body)
			form, _ := url.ParseQuery(string(body))
			c.mu.Lock()
			c.forms = append(c.forms, form)
			c.mu.Unlock()
			if c.Refuse.Load() {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = io.WriteString(w, `{"error":{"type":"invalid_request_error","message":"refused by the test"}}`)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c.URL = srv.URL
	return c
}

// Sessions are the forms of the Checkout Session creates so far.
func (c *Counted) Sessions() []url.Values {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]url.Values(nil), c.forms...)
}
