// Package check is what the Go clients of the cut check share: the log of
// what a client saw and sent, and the verdict, which compares it with a
// direct read of the finished run's stream.
package check

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// Args are a client's command line: base (the node), proxy (the cutting
// proxy in front of it), key, run (the run to follow; "-" for a client
// that makes its own) and cut (fin or rst, for the report).
type Args struct{ Base, Proxy, Key, Run, Cut string }

func ParseArgs(args []string) Args {
	if len(args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: BASE PROXY KEY RUN CUT")
		os.Exit(2)
	}
	return Args{args[0], args[1], args[2], args[3], args[4]}
}

// Events is the run's event stream at base.
func (a Args) Events(base string) string { return base + "/api/v1/runs/" + a.Run + "/events" }

// Grace is how long after the terminal event a client may take to stop.
const Grace = 5 * time.Second

// slack is the harness's own delay, when it stops a client at Grace.
const slack = 250 * time.Millisecond

// Terminal says whether an event kind ends a run.
func Terminal(kind string) bool { return kind == "completed" || kind == "failed" || kind == "canceled" }

type event struct{ ID, Kind string }

type request struct {
	at          time.Time
	lastEventID string // the Last-Event-ID (or lastEventSeq) it sent
	lastSeen    string // the id of the newest event the client had seen then
}

// Log records what one client saw and sent; it is safe for concurrent use.
type Log struct {
	Name     string
	Args     Args
	mu       sync.Mutex
	events   []event
	requests []request
	terminal time.Time     // when the terminal event arrived
	stopped  time.Time     // when the client stopped (by itself or closed)
	endedBy  string        // what stopped it
	done     chan struct{} // closed on the terminal event
}

func NewLog(name string, a Args) *Log { return &Log{Name: name, Args: a, done: make(chan struct{})} }

// Terminal is closed when the terminal event arrives.
func (l *Log) Terminal() <-chan struct{} { return l.done }

// Event records one event; blocks without a kind (the retry: block, a
// heartbeat) are not events.
func (l *Log) Event(id, kind string) {
	if kind == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, event{id, kind})
	if Terminal(kind) && l.terminal.IsZero() {
		l.terminal = time.Now()
		close(l.done)
	}
}

// Request records a request that goes on the wire, with the id it resumes after.
func (l *Log) Request(lastEventID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := ""
	if n := len(l.events); n > 0 {
		seen = l.events[n-1].ID
	}
	l.requests = append(l.requests, request{time.Now(), lastEventID, seen})
}

// Stop records that the client stopped, and why ("204", "close", …).
func (l *Log) Stop(endedBy string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped.IsZero() {
		l.stopped, l.endedBy = time.Now(), endedBy
	}
}

// Client is an http.Client whose requests the log counts. A request whose
// context is already done never reaches the wire, so it is not counted.
func (l *Log) Client() *http.Client {
	return &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		if r.Context().Err() == nil {
			id := r.Header.Get("Last-Event-ID")
			if id == "" {
				id = r.URL.Query().Get("lastEventSeq")
			}
			l.Request(id)
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Verdict waits a second for stray requests, reads the finished run's
// stream directly, prints one summary line and returns an error naming
// every assertion that failed: the client saw exactly the direct read's
// events (so each once, in order, none missing), the terminal one last;
// it was cut and resumed, each resume after the newest event it had;
// it stopped within Grace of the terminal event, sent at most
// maxAfterTerminal requests after it, and none after it stopped.
func (l *Log) Verdict(maxAfterTerminal int, extra map[string]any) error {
	time.Sleep(time.Second)
	want, directErr := Direct(l.Args)
	l.mu.Lock()
	defer l.mu.Unlock()
	var bad []string
	if directErr != nil {
		bad = append(bad, "direct read: "+directErr.Error())
	} else if len(want) != 32 {
		bad = append(bad, fmt.Sprintf("the run's stream has %d events, not 32", len(want)))
	}
	if !slices.Equal(l.events, want) {
		bad = append(bad, fmt.Sprintf("saw %d events, the stream has %d: %s", len(l.events), len(want), diff(l.events, want)))
	}
	if n := len(l.events); n == 0 || !Terminal(l.events[n-1].Kind) {
		bad = append(bad, "the last event seen is not terminal")
	}
	resumes := []string{}
	for i, r := range l.requests {
		if i > 0 {
			resumes = append(resumes, r.lastEventID)
		}
		if r.lastEventID != r.lastSeen {
			bad = append(bad, fmt.Sprintf("request %d resumed after %q, the newest event seen was %q", i+1, r.lastEventID, r.lastSeen))
		}
	}
	if len(l.requests) < 2 {
		bad = append(bad, "no second request: the stream was not cut, or the client did not resume")
	}
	after, afterStop := 0, 0
	for _, r := range l.requests {
		if !l.terminal.IsZero() && r.at.After(l.terminal) {
			after++
		}
		if !l.stopped.IsZero() && r.at.After(l.stopped) {
			afterStop++
		}
	}
	stopMS := int64(-1)
	switch {
	case l.terminal.IsZero():
		bad = append(bad, "no terminal event")
	case l.stopped.IsZero():
		bad = append(bad, "the client did not stop")
	default:
		stopMS = l.stopped.Sub(l.terminal).Milliseconds()
		if l.stopped.Sub(l.terminal) > Grace+slack {
			bad = append(bad, fmt.Sprintf("stopped %d ms after the terminal event, more than %s", stopMS, Grace))
		}
	}
	if after > maxAfterTerminal {
		bad = append(bad, fmt.Sprintf("%d requests after the terminal event, at most %d", after, maxAfterTerminal))
	}
	if afterStop > 0 {
		bad = append(bad, fmt.Sprintf("%d requests after it stopped", afterStop))
	}
	report := map[string]any{"cut": l.Args.Cut, "events": len(l.events), "want": len(want), "requests": len(l.requests),
		"resumed_after": resumes, "after_terminal": after, "stop_ms": stopMS, "ended_by": l.endedBy, "ok": len(bad) == 0}
	for k, v := range extra {
		report[k] = v
	}
	line, _ := json.Marshal(report)
	fmt.Printf("%s: %s\n", l.Name, line)
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

// diff names the first difference between what was seen and what the
// stream has.
func diff(got, want []event) string {
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(got):
			return fmt.Sprintf("missing from %s (%s) on", want[i].ID, want[i].Kind)
		case i >= len(want):
			return fmt.Sprintf("extra %s (%s) at %d", got[i].ID, got[i].Kind, i)
		case got[i] != want[i]:
			return fmt.Sprintf("at %d saw %s (%s), want %s (%s)", i, got[i].ID, got[i].Kind, want[i].ID, want[i].Kind)
		}
	}
	return "same"
}

// Direct reads the run's whole stream from the node, not through the
// proxy; on a finished run it ends after the terminal event.
func Direct(a Args) ([]event, error) {
	req, _ := http.NewRequest("GET", a.Events(a.Base), nil)
	req.Header.Set("Authorization", "Bearer "+a.Key)
	c := &http.Client{Timeout: 20 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	var evs []event
	err = Read(resp.Body, func(id, kind string) {
		if kind != "" {
			evs = append(evs, event{id, kind})
		}
	})
	return evs, err
}

// Read parses an event stream, calling fn with each block's id and
// event kind; it returns nil at a clean end of the body and the read
// error otherwise (a cut chunked body: unexpected EOF).
func Read(r io.Reader, fn func(id, kind string)) error {
	sc := bufio.NewScanner(r)
	id, kind := "", ""
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" {
			if id != "" || kind != "" {
				fn(id, kind)
			}
			id, kind = "", ""
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			id = value
		case "event":
			kind = value
		}
	}
	return sc.Err()
}
