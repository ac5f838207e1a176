package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Event is one event of a run's stream.
type Event struct {
	ID   uint64
	Type string
	Data json.RawMessage
}

// Terminal says whether the event ends the run: completed, or failed (a
// canceled run fails with the error code canceled).
func (e Event) Terminal() bool {
	return e.Type == "completed" || e.Type == "failed"
}

// Stream calls fn with each event of a run after event id `after` (0: from
// the start) until the terminal event, resuming with Last-Event-ID after a
// dropped connection, so fn sees every event once, in order. Resumed at or
// after a finished run's last event, there is nothing more: the server
// answers 204 and Stream returns nil.
func (c *Client) Stream(ctx context.Context, runNo string, after uint64, fn func(Event) error) error {
	wait := c.Backoff
	failures := 0
	for {
		done, got, err := c.streamOnce(ctx, runNo, &after, fn)
		if done || ctx.Err() != nil {
			return err
		}
		var apiErr *Error
		if errors.As(err, &apiErr) && apiErr.Status != http.StatusTooManyRequests && apiErr.Status < 500 {
			return err // 401, 404: resuming will not help
		}
		if got {
			failures, wait = 0, c.Backoff
		}
		if failures++; failures >= max(c.MaxAttempts, 1) {
			if err == nil {
				err = errors.New("client: the event stream kept ending before the run did")
			}
			return err
		}
		delay := wait
		if errors.As(err, &apiErr) && apiErr.RetryAfter > 0 {
			delay = apiErr.RetryAfter
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return ctx.Err()
		}
		wait = min(wait*2, 10*time.Second)
	}
}

// streamOnce reads one connection's worth of the stream: done after the
// terminal event (or fn's error), got when any event arrived.
func (c *Client) streamOnce(ctx context.Context, runNo string, after *uint64, fn func(Event) error) (done, got bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BaseURL+"/api/v1/runs/"+runNo+"/events", nil)
	if err != nil {
		return true, false, err
	}
	req.Header.Set("Authorization", "Bearer "+c.APIKey)
	req.Header.Set("Accept", "text/event-stream")
	if *after > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatUint(*after, 10))
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return false, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent {
		return true, false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return false, false, errorOf(resp, nil)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 32<<20)
	var ev Event
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.Type == "" {
				continue
			}
			got = true
			*after = ev.ID
			if err := fn(ev); err != nil {
				return true, got, err
			}
			if ev.Terminal() {
				return true, got, nil
			}
			ev = Event{}
		case strings.HasPrefix(line, "id: "):
			ev.ID, _ = strconv.ParseUint(line[4:], 10, 64)
		case strings.HasPrefix(line, "event: "):
			ev.Type = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.Data = json.RawMessage(line[6:])
		}
	}
	return false, got, sc.Err()
}
