package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apprun/apprun/client"
)

func TestCreateRetriesWithTheSameIdempotencyKey(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	var times []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		times = append(times, time.Now())
		switch len(keys) {
		case 1:
			w.WriteHeader(http.StatusBadGateway)
		case 2:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"code":"rate_limited","message":"slow down"}}`)
		default:
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, `{"run_no":"run_x","credit_cost":25}`)
		}
	}))
	defer srv.Close()
	c := client.New(srv.URL, "ak_test")
	c.Backoff = 10 * time.Millisecond
	run, err := c.CreateRun(context.Background(), "cold-email-writer", map[string]any{"a": 1}, nil)
	if err != nil || run.RunNo != "run_x" {
		t.Fatalf("CreateRun = %+v, %v", run, err)
	}
	if len(keys) != 3 || keys[0] == "" || keys[0] != keys[1] || keys[1] != keys[2] {
		t.Fatalf("Idempotency-Keys %q: want one key on every try", keys)
	}
	if gap := times[2].Sub(times[1]); gap < time.Second {
		t.Fatalf("retried %s after a 429 with Retry-After: 1", gap)
	}
}

func TestRefusalsAreNotRetried(t *testing.T) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.WriteHeader(http.StatusUnprocessableEntity)
		fmt.Fprint(w, `{"error":{"code":"invalid_input","message":"input.target_role: required"}}`)
	}))
	defer srv.Close()
	_, err := client.New(srv.URL, "ak_test").CreateRun(context.Background(), "x", map[string]any{}, nil)
	var e *client.Error
	if !errors.As(err, &e) || e.Code != "invalid_input" || e.Status != 422 || calls != 1 {
		t.Fatalf("error %v after %d calls, want invalid_input once", err, calls)
	}
}

func TestStreamResumesAfterADroppedConnection(t *testing.T) {
	var mu sync.Mutex
	var lastIDs []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		lastIDs = append(lastIDs, r.Header.Get("Last-Event-ID"))
		n := len(lastIDs)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		if n == 1 { // two events, then the connection drops
			fmt.Fprint(w, "retry: 3000\n\nid: 5\nevent: started\ndata: {}\n\nid: 9\nevent: tool_running\ndata: {\"step\":1}\n\n")
			return
		}
		fmt.Fprint(w, "retry: 3000\n\nid: 12\nevent: completed\ndata: {\"status\":\"completed\"}\n\n")
	}))
	defer srv.Close()
	c := client.New(srv.URL, "ak_test")
	c.Backoff = 10 * time.Millisecond
	var got []uint64
	err := c.Stream(context.Background(), "run_x", 0, func(ev client.Event) error {
		got = append(got, ev.ID)
		return nil
	})
	if err != nil || fmt.Sprint(got) != "[5 9 12]" {
		t.Fatalf("events %v, %v; want 5 9 12 once each", got, err)
	}
	if fmt.Sprint(lastIDs) != "[ 9]" {
		t.Fatalf("Last-Event-ID sent %q, want none then 9", lastIDs)
	}
}

// Resumed at or after a finished run's last event, the server answers 204:
// there is nothing more, and Stream ends without an error or a retry.
func TestStreamEndsOnNoContent(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	c := client.New(srv.URL, "ak_x")
	err := c.Stream(context.Background(), "run_x", 9, func(client.Event) error {
		t.Fatal("an event from a 204")
		return nil
	})
	if err != nil || calls.Load() != 1 {
		t.Fatalf("Stream after the end: %v after %d requests, want nil after 1", err, calls.Load())
	}
}
