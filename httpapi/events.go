package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apprun/apprun/engine"
)

func (a *API) routeEvents() {
	a.router.HandleFunc("/api/v1/runs/{run_no}/events", a.reader(a.streamEvents)).Methods(http.MethodGet)
}

// resumeAfter reads Last-Event-ID (sent by EventSource on reconnect, so it
// wins) or ?lastEventSeq.
func resumeAfter(r *http.Request) (uint64, error) {
	s := r.Header.Get("Last-Event-ID")
	name := "Last-Event-ID"
	if s == "" {
		s, name = r.URL.Query().Get("lastEventSeq"), "lastEventSeq"
	}
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, errorf(engine.CodeInvalidRequest, "%s must be a non-negative integer event id", name)
	}
	return n, nil
}

// streamEvents handles GET /api/v1/runs/{run_no}/events: the run's log as
// Server-Sent Events, replayed after the requested id, then followed live
// until the terminal event. Heartbeats are SSE comments.
func (a *API) streamEvents(w http.ResponseWriter, r *http.Request, c caller) {
	after, err := resumeAfter(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	run, err := a.ownRun(r, c)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if !a.streams.acquire(c.KeyID) {
		a.fail(w, r, &engine.Error{Code: engine.CodeConcurrencyLimit, RetryAfter: time.Second,
			Message: fmt.Sprintf("this API key already has %d event streams open; close one first", a.cfg.StreamsPerKey)})
		return
	}
	defer a.streams.release(c.KeyID)
	a.metrics.streams.Inc()
	defer a.metrics.streams.Dec()
	flusher, ok := w.(http.Flusher)
	if !ok {
		a.fail(w, r, fmt.Errorf("response writer cannot flush"))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	if run.Terminal() && run.LastSeq <= after {
		return // nothing after that id: the run has ended
	}
	ctx := r.Context()
	f := a.cfg.Engine.Follow(run.RunNo, after)
	defer f.Close()
	send := func(evs []engine.StreamEvent) (bool, error) {
		for _, ev := range evs {
			if ev.Terminal {
				// A client that saw the end can read the result at once.
				_ = a.awaitRead(ctx, ev.Seq)
			}
			if err := writeEvent(w, ev); err != nil {
				return true, err
			}
			if ev.Terminal {
				flusher.Flush()
				return true, nil
			}
		}
		flusher.Flush()
		return false, nil
	}
	evs, err := f.Catchup(ctx)
	if done, _ := send(evs); done || err != nil {
		a.endStream(r, err)
		return
	}
	beat := time.NewTicker(a.cfg.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.closing:
			return
		case <-beat.C:
			if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil {
				return
			}
			flusher.Flush()
			// A safety net under the live feed: when the read model (fed
			// by its own gap-free consumer) knows of a later event than
			// the stream sent, the log is read again.
			evs = nil
			if latest, rerr := a.cfg.Reads.Run(run.RunNo); rerr != nil || latest.LastSeq > f.Last() {
				evs, err = f.Catchup(ctx)
			}
		case m, ok := <-f.Live():
			if !ok {
				return // too slow or shutting down: the client resumes
			}
			evs, err = f.Receive(ctx, m)
		}
		if done, _ := send(evs); done || err != nil {
			a.endStream(r, err)
			return
		}
	}
}

func (a *API) endStream(r *http.Request, err error) {
	if err != nil && r.Context().Err() == nil && err != context.Canceled {
		a.cfg.Logger.Error("event stream ended on error", "route", routeOf(r), "err", err)
	}
}

func writeEvent(w http.ResponseWriter, ev engine.StreamEvent) error {
	data, err := json.Marshal(ev.Data)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, ev.Type, data)
	return err
}

func isEventStream(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/events")
}

// streamCounter counts the open event streams of each key on this node.
type streamCounter struct {
	mu    sync.Mutex
	max   int
	count map[string]int
}

func newStreamCounter(max int) *streamCounter {
	return &streamCounter{max: max, count: map[string]int{}}
}

func (s *streamCounter) acquire(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.count[key] >= s.max {
		return false
	}
	s.count[key]++
	return true
}

func (s *streamCounter) release(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.count[key]--; s.count[key] <= 0 {
		delete(s.count, key)
	}
}
