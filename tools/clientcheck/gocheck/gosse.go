package main

import (
	"context"
	"net/http"
	"time"

	"apprun.dev/clientcheck/check"
	"github.com/tmaxmax/go-sse"
)

// gosse follows the run with github.com/tmaxmax/go-sse's client, with its
// defaults, cancelling the request's context on the terminal event. It
// reconnects with Last-Event-ID after an error or an end of the body,
// waiting the server's retry:.
func gosse(a check.Args) error {
	log := check.NewLog("go-sse", a)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.Events(a.Proxy), nil)
	req.Header.Set("Authorization", "Bearer "+a.Key)
	conn := (&sse.Client{HTTPClient: log.Client()}).NewConnection(req)
	conn.SubscribeToAll(func(e sse.Event) {
		log.Event(e.LastEventID, e.Type)
		if check.Terminal(e.Type) {
			cancel()
		}
	})
	err := conn.Connect()
	log.Stop("returned")
	msg := "returned"
	if err != nil {
		msg = err.Error()
	}
	return log.Verdict(0, map[string]any{"connect": msg})
}
