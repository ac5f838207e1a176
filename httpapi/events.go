package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/apprun/apprun/engine"
)

func (a *API) routeEvents() {
	a.router.HandleFunc("/api/v1/runs/{run_no}/events", a.streamReader(a.streamEvents)).Methods(http.MethodGet)
	a.router.HandleFunc("/api/v1/runs/{run_no}/stream-token", a.reader(a.streamToken)).Methods(http.MethodPost)
}

// streamReader is reader for the event stream: an API key, or, with no
// Authorization header, the website session of the run's owner.
func (a *API) streamReader(h func(http.ResponseWriter, *http.Request, caller)) http.HandlerFunc {
	keyed := a.reader(h)
	return func(w http.ResponseWriter, r *http.Request) {
		var c caller
		switch {
		case r.Header.Get("Authorization") != "":
			keyed(w, r)
			return
		case r.URL.Query().Has("token"):
			var err error
			if c, err = a.tokenCaller(r); err != nil {
				a.fail(w, r, err)
				return
			}
		default:
			acct, ok := "", false
			if a.cfg.Sessions != nil {
				acct, ok = a.cfg.Sessions.SessionAccount(r)
			}
			if !ok {
				keyed(w, r) // answers 401 as for any request without a key
				return
			}
			c = caller{KeyID: engine.SessionKeyID(acct), AccountID: acct}
		}
		q, err := a.cfg.Engine.AllowReadQuota(r.Context(), c.KeyID)
		setQuota(w, q)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), callerKey, c)), c)
	}
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
	s := &stream{a: a, key: c.KeyID, account: c.AccountID, runNo: run.RunNo, route: routeOf(r), revoked: make(chan struct{})}
	if err := a.streams.add(s); err != nil {
		a.fail(w, r, err)
		return
	}
	out, err := openSSE(w, r)
	if out == nil {
		a.streams.remove(s)
		a.endStream(routeOf(r), err)
		return
	}
	s.out = out
	a.metrics.streams.Inc()
	if err != nil {
		s.end(err) // the client left before the headers
		return
	}
	if run.Terminal() && run.LastSeq <= after {
		// Resumed at or after the end: the terminal event again (its id is
		// the run's last), so a client that missed it learns the outcome.
		after = run.LastSeq - 1
	}
	f := a.cfg.Engine.Follow(run.RunNo, after)
	if out.conn == nil { // HTTP/2: the stream must stay in the handler
		s.replayAndFollow(r.Context(), f)
		return
	}
	// On HTTP/1.1 the replay and the live part run on a goroutine of
	// their own once net/http has let go of the connection, so an open
	// stream holds no request, buffers or handler stack: only the
	// follower and the connection. Not the request's context: it ends
	// with the handler, and it would keep the whole request reachable; a
	// hang-up is seen on the connection itself.
	go s.replayAndFollow(context.Background(), f)
}

// replayAndFollow sends the stored events after the follower's position,
// then the live ones until the terminal event, the client hangs up, or the
// node stops.
func (s *stream) replayAndFollow(ctx context.Context, f *engine.Follower) {
	var err error
	defer func() {
		f.Close()
		if v := recover(); v != nil {
			err = fmt.Errorf("panic in event stream: %v", v)
		}
		s.end(err)
	}()
	evs, err := f.Catchup(ctx)
	done, serr := s.send(ctx, evs)
	if err = errors.Join(err, serr); done || err != nil {
		return
	}
	err = s.follow(ctx, f)
}

// stream is one open event stream.
type stream struct {
	a       *API
	out     *sseConn
	key     string // the API key's id, or the session's SessionKeyID
	account string
	runNo   string
	route   string
	// revoked is closed when the key that opened the stream is revoked.
	revoked chan struct{}
}

// end closes the stream and gives back its place.
func (s *stream) end(err error) {
	s.a.streams.remove(s)
	s.a.metrics.streams.Dec()
	s.out.close()
	s.a.endStream(s.route, err)
}

// send writes events; done after the terminal one.
func (s *stream) send(ctx context.Context, evs []engine.StreamEvent) (bool, error) {
	for _, ev := range evs {
		if ev.Terminal {
			// A client that saw the end can read the result at once.
			_ = s.a.awaitRead(ctx, ev.Seq)
		}
		if err := s.out.event(ev); err != nil {
			return true, err
		}
		if ev.Terminal {
			return true, s.out.flush()
		}
	}
	return false, s.out.flush()
}

// follow sends the run's live events until the terminal one, the client
// hangs up, or the node stops. Heartbeats are SSE comments.
func (s *stream) follow(ctx context.Context, f *engine.Follower) error {
	beat := time.NewTicker(s.a.cfg.Heartbeat)
	defer beat.Stop()
	for {
		var (
			evs []engine.StreamEvent
			err error
		)
		select {
		case <-s.out.gone:
			return nil
		case <-s.a.closing:
			return nil
		case <-s.revoked:
			return nil // the client reconnects, and its key is refused
		case <-beat.C:
			if err := s.out.comment("heartbeat"); err != nil {
				return err
			}
			if err := s.out.flush(); err != nil {
				return err
			}
			// A safety net under the live feed: when the read model (fed
			// by its own gap-free consumer) knows of a later event than
			// the stream sent, the log is read again.
			if latest, rerr := s.a.cfg.Reads.Run(s.runNo); rerr != nil || latest.LastSeq > f.Last() {
				evs, err = f.Catchup(ctx)
			}
		case m, ok := <-f.Live():
			if !ok {
				return nil // too slow or shutting down: the client resumes
			}
			evs, err = f.Receive(ctx, m)
		}
		done, serr := s.send(ctx, evs)
		if err = errors.Join(err, serr); done || err != nil {
			return err
		}
	}
}

func (a *API) endStream(route string, err error) {
	var ne net.Error
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, net.ErrClosed) && !errors.As(err, &ne) {
		a.cfg.Logger.Error("event stream ended on error", "route", route, "err", err)
	}
}

func isEventStream(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/events")
}
