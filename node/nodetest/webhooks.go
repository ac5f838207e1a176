package nodetest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/apprun/apprun/node"
	"github.com/apprun/apprun/service"
)

func WithWebhooks(backoff time.Duration) Option {
	return func(c *node.Config) { c.Webhooks = service.WebhookConfig{AllowPrivate: true, Backoff: backoff} }
}

// Receiver is a webhook endpoint that answers from a script of statuses
// (then 200) and records every delivery.
type Receiver struct {
	*httptest.Server
	mu       sync.Mutex
	statuses []int
	got      []Delivery
	arrived  chan struct{}
}

type Delivery struct {
	Header http.Header
	Body   []byte
}

func NewReceiver(t *testing.T, statuses ...int) *Receiver {
	rc := &Receiver{statuses: statuses, arrived: make(chan struct{}, 100)}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, Delivery{Header: r.Header.Clone(), Body: body})
		status := http.StatusOK
		if len(rc.statuses) > 0 {
			status, rc.statuses = rc.statuses[0], rc.statuses[1:]
		}
		rc.mu.Unlock()
		w.WriteHeader(status)
		rc.arrived <- struct{}{}
	}))
	t.Cleanup(rc.Close)
	return rc
}

// Await waits for the n-th delivery.
func (rc *Receiver) Await(t *testing.T, n int) []Delivery {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		rc.mu.Lock()
		got := append([]Delivery(nil), rc.got...)
		rc.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-rc.arrived:
		case <-deadline:
			t.Fatalf("%d deliveries after 30s, want %d", len(got), n)
		}
	}
}

// WaitDelivery polls the delivery log until the run's delivery has status.
func WaitDelivery(t *testing.T, h *Harness, a Account, runNo, status string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := h.Do("GET", "/api/v1/webhooks/deliveries", a.Key, nil)
		for _, d := range r.JSON(t)["data"].([]any) {
			if m := d.(map[string]any); m["run_no"] == runNo && m["status"] == status {
				return m
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s delivery for %s in 30s: %s", status, runNo, r.Body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Got is every delivery the receiver has had so far.
func (rc *Receiver) Got() []Delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Delivery(nil), rc.got...)
}
