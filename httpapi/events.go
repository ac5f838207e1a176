package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/apprun/apprun/edge"
	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/service"
	"github.com/apprun/apprun/service/live"
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
		case len(r.Header["Authorization"]) > 0: // any, even empty or several: the key check judges it
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
			c = caller{KeyID: service.SessionKeyID(acct), AccountID: acct}
		}
		known(w, r, c.KeyID)
		q, err := a.cfg.Engine.AllowReadQuota(r.Context(), c.KeyID)
		setQuota(w, q)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		h(w, r, c)
	}
}

// resumeAfter reads Last-Event-ID (sent by EventSource on reconnect, so it
// wins) or ?lastEventSeq.
func resumeAfter(r *http.Request) (uint64, error) {
	s, err := headerOnce(r, "Last-Event-ID")
	if err != nil {
		return 0, err
	}
	name := "Last-Event-ID"
	if s == "" {
		if s, err = queryOnce(r, "lastEventSeq"); err != nil {
			return 0, err
		}
		name = "lastEventSeq"
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
	if run.Terminal() && run.LastSeq <= after {
		// Resumed at or after the end (an EventSource reconnecting after
		// the terminal event): the client has every event. 204 tells
		// EventSource to stop reconnecting; sending the terminal event
		// again would be a duplicate, and the reconnects would go on.
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if after > run.LastSeq {
		// Past the run's last event as the read models have it: the
		// client may have it from the log already, or name an id the run
		// never sent. Past the log's last, follow the run from there to
		// its end, as a resume inside the run does: its later events all
		// come after the log's last, and a stream waiting for ids past
		// `after` would never end (issue 47).
		last, err := a.cfg.Engine.RunLastSeq(r.Context(), run.RunNo)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		after = min(after, last)
	}
	if edge.IsHead(r) {
		// A HEAD: the stream's headers and no stream (a stream takes the
		// connection over, and would write a body after them).
		sseHeaders(w.Header())
		w.WriteHeader(http.StatusOK)
		return
	}
	// The stream's context ends when the client hangs up, its key is
	// revoked, or the node closes; on HTTP/2 also with the request.
	http1 := r.ProtoMajor == 1
	parent := r.Context()
	if http1 {
		// On HTTP/1.1 the stream runs on a goroutine of its own once
		// net/http has let go of the connection (below): not the
		// request's context, which ends with the handler and would keep
		// the whole request reachable, but the node's.
		parent = a.closed
	}
	ctx, cancel := context.WithCancel(parent)
	s := &stream{a: a, key: c.KeyID, account: c.AccountID, runNo: run.RunNo, route: routeOf(r), cancel: cancel}
	if err := a.streams.add(s); err != nil {
		cancel()
		a.fail(w, r, err)
		return
	}
	out, err := openSSE(w, r)
	if out == nil {
		cancel()
		a.streams.remove(s)
		a.endStream(routeOf(r), err)
		return
	}
	s.out, s.stopOnClose = out, func() bool { return false }
	if !http1 { // the request's context: the node's close ends it too
		s.stopOnClose = context.AfterFunc(a.closed, cancel)
	}
	s.opened.Store(out)
	a.metrics.streams.Inc()
	if err != nil {
		s.end(err) // the client left before the headers
		return
	}
	if out.conn == nil { // HTTP/2: the stream must stay in the handler
		s.watch(ctx, after)
		return
	}
	// On HTTP/1.1 an open stream holds no request, buffers or handler
	// stack: only its watch and the connection.
	go s.watch(ctx, after)
}

// watch sends the run's events after `after` until the terminal one, the
// client hangs up, its key is revoked, or the node stops (engine.Watch),
// with a heartbeat comment every Heartbeat.
func (s *stream) watch(ctx context.Context, after uint64) {
	var err error
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic in event stream: %v", v)
		}
		if errors.Is(err, context.Canceled) {
			err = nil // hang-up, revocation or shutdown: the client resumes
		}
		s.end(err)
	}()
	err = s.a.cfg.Engine.Watch(ctx, s.runNo, after, s.a.cfg.Heartbeat,
		func(evs []live.StreamEvent) (bool, error) { return s.send(ctx, evs) },
		func(last uint64) (bool, error) {
			if s.out.hungUp() {
				return false, errHungUp
			}
			if err := s.out.comment("heartbeat"); err != nil {
				return false, err
			}
			if err := s.out.flush(); err != nil {
				return false, err
			}
			// A safety net under the live feed: when the read model (fed
			// by its own gap-free consumer) knows of a later event than
			// the stream sent, the log is read again. As this node has
			// applied it: the next heartbeat looks again, and asking the
			// log's leader first, every stream every heartbeat, made the
			// leader the bottleneck of a cluster's streams.
			latest, rerr := s.a.cfg.Reads.AppliedRun(s.runNo)
			return rerr != nil || latest.LastSeq > last, nil
		})
}

// stream is one open event stream.
type stream struct {
	a       *API
	out     *sseConn
	key     string // the API key's id, or the session's SessionKeyID
	account string
	runNo   string
	route   string
	// cancel ends the stream's context: hang-up, revocation, shutdown.
	cancel      context.CancelFunc
	stopOnClose func() bool
	// opened is out once the stream is open, for the stream caps to ask
	// whether its client hung up (streams.go), from other requests.
	opened atomic.Pointer[sseConn]
}

// hungUp says the stream's client is known to have hung up.
func (s *stream) hungUp() bool { return s.opened.Load().hungUp() }

// end closes the stream and gives back its place.
func (s *stream) end(err error) {
	s.cancel()
	s.stopOnClose()
	s.a.streams.remove(s)
	s.a.metrics.streams.Dec()
	s.out.close()
	s.a.endStream(s.route, err)
}

// send writes events; done after the terminal one.
func (s *stream) send(ctx context.Context, evs []live.StreamEvent) (bool, error) {
	for _, ev := range evs {
		if ev.Terminal {
			// A client that saw the end can read the result at once.
			_ = s.a.awaitRead(ctx, ev.Seq)
		}
		if err := s.out.event(ev); err != nil {
			return true, err
		}
		if ev.Terminal {
			if err := s.out.final(); err != nil {
				return true, err
			}
			return true, s.out.flush()
		}
	}
	return false, s.out.flush()
}

func (a *API) endStream(route string, err error) {
	var ne net.Error
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, net.ErrClosed) && !errors.As(err, &ne) {
		a.cfg.Logger.Error("event stream ended on error", "route", route, "err", err)
	}
}

// IsEventStream says whether r asks for a run's event stream.
func IsEventStream(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/events")
}
