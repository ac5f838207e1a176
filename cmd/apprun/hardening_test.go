package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestEventStreamsPerKeyAreCapped(t *testing.T) {
	h := start(t, withLimits(noLimits), withStreamsPerKey(2))
	a := h.account(100)
	runNo := h.create(a, testRun("hold"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	first, cancelFirst := context.WithCancel(ctx)
	for _, c := range []context.Context{first, ctx} {
		evs, _, resp := h.stream(c, a, runNo)
		if resp.StatusCode != 200 {
			t.Fatalf("stream within the cap: %d", resp.StatusCode)
		}
		<-evs // started: the stream is being served
	}
	r := h.do("GET", "/api/v1/runs/"+runNo+"/events", a.Key, nil)
	if r.Status != 429 || r.errorCode(t) != "concurrency_limit" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("third stream: %d %s", r.Status, r.Body)
	}
	// Another key of the same account has its own streams.
	k2 := account{Key: h.do("POST", "/admin/v1/accounts/"+a.ID+"/keys", testAdminToken, nil).json(t)["api_key"].(string)}
	if _, _, resp := h.stream(ctx, k2, runNo); resp.StatusCode != 200 {
		t.Fatalf("another key: %d", resp.StatusCode)
	}
	// Closing a stream frees its place.
	cancelFirst()
	for {
		c2, stop := context.WithCancel(ctx)
		_, _, resp := h.stream(c2, a, runNo)
		stop()
		if resp.StatusCode == 200 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("a closed stream's place was never freed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestEventStreamsOutliveTheRequestTimeout(t *testing.T) {
	h := start(t, withLimits(noLimits), withRequestTimeout(200*time.Millisecond), withHeartbeat(50*time.Millisecond))
	a := h.account(100)
	runNo := h.create(a, testRun("hold"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	events, comments, _ := h.stream(ctx, a, runNo)
	<-events
	began := time.Now()
	for time.Since(began) < 600*time.Millisecond {
		select {
		case <-comments:
		case <-ctx.Done():
			t.Fatal("heartbeats stopped")
		}
	}
	h.releaseHeld()
	var last sseEvent
	for ev := range events {
		last = ev
	}
	if last.Event != "completed" {
		t.Fatalf("a stream open past the request timeout ended with %q, want completed", last.Event)
	}
}

func TestLogsNeverHoldKeysTokensOrInput(t *testing.T) {
	var logs syncBuffer
	h := start(t, withLimits(noLimits), withLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	a := h.account(100)
	secret := "SECRET-PRODUCT-do-not-log"
	body := map[string]any{"app_slug": "cold-email-writer", "input": map[string]any{"product_description": secret, "target_role": "CFOs"}}
	h.waitRun(a, h.create(a, body))
	h.waitRun(a, h.create(a, testRun("fail")))
	h.do("POST", "/api/v1/runs", "ak_wrongkey", body)
	h.do("POST", "/api/v1/runs", a.Key, map[string]any{"app_slug": "cold-email-writer", "input": map[string]any{"product_description": secret}})
	h.node.ns.Stop() // errors get logged: make sure they carry nothing secret either
	h.do("POST", "/api/v1/runs", a.Key, body)
	if logs.String() == "" {
		t.Fatal("nothing was logged: the test proves nothing")
	}
	for _, s := range []string{a.Key, testAdminToken, secret} {
		if strings.Contains(logs.String(), s) {
			t.Fatalf("logs contain %q:\n%s", s, logs.String())
		}
	}
}
