// Package edge is the one request pipeline in front of every surface of
// a node (the REST API, event streams, MCP, the website): whatever route
// a request takes, or none, it passes here first. The surfaces register
// themselves (Register): which requests are theirs, how large a body and
// how long a request they take, which of their routes must read a body
// before they know its sender, and how a refusal is shown to their
// clients. The edge knows no path of its own.
//
// For every request it gives:
//
//   - a HEAD answered as the GET it asks about, without the body;
//   - one Content-Type at most, and no multipart body (no route takes a
//     file), refused at once, unread;
//   - a read deadline on the request (its body included) and a write
//     deadline of RequestTimeout, except on the surfaces whose answers
//     are long by design (event streams, profiles: GETs that take no body,
//     whose request the server's header timeout bounds) or longer (MCP's
//     tool calls stream until their run ends: WriteWait);
//   - the surface's body limit, a body announced larger refused at once,
//     unread, and the rest cut at the limit;
//   - for a route that reads a body before it knows its sender (a sign-in,
//     Stripe's event), the body read here, within a budget (bodies.go).
//
// A refusal closes its connection: net/http would otherwise read on to
// drain the unread body, for as long as the client takes.
package edge

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"os"
	"strings"
	"time"
)

// Config configures the edge.
type Config struct {
	// RequestTimeout bounds reading and answering one request (default 30s).
	RequestTimeout time.Duration
	// OnRefused, when set, is told of every request the edge refuses, as
	// a refusal of its client address (httpapi's refusal budgets).
	OnRefused func(r *http.Request)
}

// Surface is one surface of the node as the edge knows it.
type Surface struct {
	// Name names it in messages.
	Name string
	// Owns says whether r is the surface's. The first surface registered
	// that owns a request serves it.
	Owns func(r *http.Request) bool
	// Handler serves its requests.
	Handler http.Handler
	// BodyLimit is the most a request of the surface may send (a GET and
	// a HEAD: NoBodyLimit); nil: DefaultBodyLimit.
	BodyLimit func(r *http.Request) int64
	// Long says the surface's answers last as long as what they follow
	// (an event stream, a profile): no deadlines, and no body at all.
	Long bool
	// WriteWait, when set, is how long its answers may take to write
	// (RequestTimeout is added): MCP's tool calls stream until their run
	// ends.
	WriteWait time.Duration
	// ReadsUnknown, when set, says which budget a request's body must be
	// read within because the route reads it before it knows who sent it
	// (a sign-in, Stripe's event), or nil for none.
	ReadsUnknown func(r *http.Request) *Budget
	// Refuse shows a refusal of the edge to the surface's clients (the
	// API's error envelope, the website's page).
	Refuse func(w http.ResponseWriter, r *http.Request, refusal Refusal)
}

// Body limits.
const (
	// DefaultBodyLimit is a surface's body limit when it sets none.
	DefaultBodyLimit = 1 << 20
	// NoBodyLimit bounds the body of a request that takes none (a GET).
	NoBodyLimit = 4 << 10
)

// Reason is why the edge refused a request.
type Reason string

// The edge's reasons.
const (
	ReasonContentTypes Reason = "content_types" // more than one Content-Type header
	ReasonMultipart    Reason = "multipart"     // a multipart body
	ReasonNoBody       Reason = "no_body"       // a body where none is taken
	ReasonTooLarge     Reason = "too_large"     // a body announced larger than the limit
	ReasonUnreadable   Reason = "unreadable"    // a body that did not arrive whole, in time
	ReasonBusy         Reason = "busy"          // no room in a budget for the body
)

// Refusal is one request the edge refuses: its status, why, and a message
// for the client (a surface may say it its own way: Reason, Limit).
type Refusal struct {
	Status  int
	Reason  Reason
	Message string
	// Limit is the body limit, for ReasonTooLarge.
	Limit int64
}

// Edge is the pipeline (see above); it is an http.Handler.
type Edge struct {
	cfg      Config
	surfaces []Surface
}

// New builds an edge with no surface yet.
func New(cfg Config) *Edge {
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	return &Edge{cfg: cfg}
}

// Register adds a surface, after those registered before it. A surface
// without Owns owns every request (the last one: the fallback).
func (e *Edge) Register(s Surface) {
	if s.Handler == nil || s.Refuse == nil {
		panic("edge: a surface needs a Handler and a Refuse")
	}
	e.surfaces = append(e.surfaces, s)
}

// ServeHTTP implements http.Handler.
func (e *Edge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodHead {
		r = headAsGet(r)
	}
	s := e.surfaceOf(r)
	if s == nil {
		http.NotFound(w, r) // no surface registered: a node being built
		return
	}
	rc := http.NewResponseController(w)
	refuse := func(status int, reason Reason, limit int64, format string, args ...any) {
		w.Header().Set("Connection", "close")
		_ = rc.SetReadDeadline(time.Now())
		if e.cfg.OnRefused != nil {
			e.cfg.OnRefused(r)
		}
		s.Refuse(w, r, Refusal{Status: status, Reason: reason, Limit: limit, Message: fmt.Sprintf(format, args...)})
	}
	if n := len(r.Header.Values("Content-Type")); n > 1 {
		// Every surface reads the first, a proxy in front may read
		// another (httpapi/once.go).
		refuse(http.StatusBadRequest, ReasonContentTypes, 0, "send one Content-Type header, not %d", n)
		return
	}
	if isMultipart(r) {
		refuse(http.StatusBadRequest, ReasonMultipart, 0, "multipart bodies are not accepted; no route takes a file")
		return
	}
	if s.Long {
		// Long GETs with nothing to read: the server's header timeout
		// bounds the request, and a body is refused.
		if r.ContentLength != 0 {
			refuse(http.StatusBadRequest, ReasonNoBody, 0, "%s takes no request body", r.URL.Path)
			return
		}
		s.Handler.ServeHTTP(w, r)
		return
	}
	now := time.Now()
	_ = rc.SetReadDeadline(now.Add(e.cfg.RequestTimeout))
	_ = rc.SetWriteDeadline(now.Add(s.WriteWait + e.cfg.RequestTimeout))
	limit := s.limit(r)
	if r.ContentLength > limit {
		refuse(http.StatusBadRequest, ReasonTooLarge, limit, "request body exceeds %d bytes", limit)
		return
	}
	if r.Body == http.NoBody {
		// net/http's body for a request that declared none (most reads):
		// nothing to bound.
		s.Handler.ServeHTTP(w, r)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	if s.ReadsUnknown != nil {
		if b := s.ReadsUnknown(r); b != nil {
			e.readUnknown(w, r, b, limit, s, refuse) // bodies.go
			return
		}
	}
	s.Handler.ServeHTTP(w, r)
}

func (e *Edge) surfaceOf(r *http.Request) *Surface {
	for i := range e.surfaces {
		if s := &e.surfaces[i]; s.Owns == nil || s.Owns(r) {
			return s
		}
	}
	return nil
}

func (s *Surface) limit(r *http.Request) int64 {
	if r.Method == http.MethodGet {
		return NoBodyLimit
	}
	if s.BodyLimit == nil {
		return DefaultBodyLimit
	}
	return s.BodyLimit(r)
}

// headAsGet is a HEAD request as the GET it asks about (RFC 9110 §9.3.2:
// the same answer without its body), so that every GET route answers it;
// net/http, which still holds the HEAD, drops the body the route writes.
// IsHead tells a route that must not write at all (an event stream takes
// its connection over) that it is answering a HEAD.
func headAsGet(r *http.Request) *http.Request {
	g := r.WithContext(context.WithValue(r.Context(), headKey{}, true))
	g.Method = http.MethodGet
	return g
}

type headKey struct{}

// IsHead says whether r is a HEAD answered as a GET (headAsGet).
func IsHead(r *http.Request) bool { return r.Context().Value(headKey{}) != nil }

func isMultipart(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return false // most reads: nothing to parse
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && strings.HasPrefix(mt, "multipart/")
}

// BodyProblem says why a body could not be read, in the client's terms.
func BodyProblem(err error, limit int64) string {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return fmt.Sprintf("it exceeds %d bytes", limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "it did not arrive in time"
	}
	return "the connection failed"
}
