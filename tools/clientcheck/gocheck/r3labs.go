package main

import (
	"context"
	"time"

	"apprun.dev/clientcheck/check"
	"github.com/r3labs/sse/v2"
)

// r3labs follows the run with github.com/r3labs/sse/v2 as its README
// does, cancelling the context on the terminal event. It reconnects with
// Last-Event-ID after an error; at a clean end of the body it returns.
func r3labs(a check.Args) error {
	log := check.NewLog("r3labs", a)
	client := sse.NewClient(a.Events(a.Proxy))
	client.Connection = log.Client()
	client.Headers["Authorization"] = "Bearer " + a.Key
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	returned := make(chan error, 1)
	go func() {
		returned <- client.SubscribeRawWithContext(ctx, func(msg *sse.Event) {
			log.Event(string(msg.ID), string(msg.Event))
			if check.Terminal(string(msg.Event)) {
				cancel()
			}
		})
	}()
	// Subscribe should return once the context is cancelled; if it has
	// not within Grace, the summary's subscribe field says so.
	var err error
	select {
	case err = <-returned:
		log.Stop("returned")
	case <-log.Terminal():
		log.Stop("cancel")
		select {
		case err = <-returned:
		case <-time.After(check.Grace):
			err = context.DeadlineExceeded
		}
	}
	msg := "returned"
	if err != nil {
		msg = err.Error()
	}
	return log.Verdict(0, map[string]any{"subscribe": msg})
}
