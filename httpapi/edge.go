package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/apprun/apprun/engine"
)

// The edge is the one request pipeline in front of every surface: the REST
// API, event streams, MCP and the website. Whatever route a request takes,
// or none, it gets here first:
//
//   - a read deadline on the request (its body included) of RequestTimeout,
//     and a write deadline of RequestTimeout, except on the answers that
//     are long by design: MCP, whose tool calls stream progress until the
//     run ends (write deadline MCPWait + RequestTimeout), and event streams
//     and profiles, GETs that take no body (the server's header timeout
//     bounds their request);
//   - a body limit by route class, refused at once when Content-Length says
//     more, and multipart bodies refused everywhere (no route takes a file);
//   - errors in the one envelope;
//   - a HEAD answered as the GET it asks about, without the body.
//
// No body is read before the caller is known: every route checks its key
// (or session, or signature) from the headers first, and a request
// refused so closes its connection unread. MCP's body is read whole once
// its key is checked (ReadMessage); the three routes that must read a
// body before they know its sender get it from the edge, within a budget
// (bodies.go).

// Body limits by route class.
const (
	apiBodyLimit  = maxBody // JSON API: 1 MiB
	mcpBodyLimit  = 1 << 20 // an MCP message carries an App's input, as a create does
	formBodyLimit = 64 << 10
	noBodyLimit   = 4 << 10 // routes that take no body (GET, event streams)
)

type routeClass int

const (
	classAPI routeClass = iota
	classStream
	classMCP
	classForm
	classProfile
)

func classOf(r *http.Request) routeClass {
	p := r.URL.Path
	switch {
	case isEventStream(r):
		return classStream
	case p == "/mcp":
		return classMCP
	case isProfile(r):
		return classProfile
	case IsAPIPath(p):
		return classAPI
	}
	return classForm
}

// IsAPIPath says whether path is served by the API (the rest of the
// origin, /mcp aside, is the website's): the one list the edge and the
// node's router both go by.
func IsAPIPath(p string) bool {
	return strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/admin/") || strings.HasPrefix(p, "/debug/") ||
		p == "/api" || p == "/admin" || p == "/billing/stripe/webhook" || p == "/healthz" || p == "/readyz" || p == "/metrics" || isOAuthProbe(p)
}

// isOAuthProbe says whether p is where an OAuth client (an MCP client such
// as mcp-remote, given a bad key) looks for discovery or registration:
// apprun does no OAuth, and says so in the API's envelope.
func isOAuthProbe(p string) bool {
	return strings.HasPrefix(p, "/.well-known/") || p == "/register"
}

// bodyLimitOf is the most r's route takes: its class's, or the Stripe
// webhook's own (a Stripe event is a few KiB).
func bodyLimitOf(r *http.Request, c routeClass) int64 {
	if r.URL.Path == "/billing/stripe/webhook" {
		return maxWebhookBody
	}
	return c.bodyLimit(r.Method)
}

func (c routeClass) bodyLimit(method string) int64 {
	switch {
	case c == classMCP:
		return mcpBodyLimit
	case method == http.MethodGet || method == http.MethodHead || c == classStream:
		return noBodyLimit
	case c == classForm:
		return formBodyLimit
	}
	return apiBodyLimit
}

// Edge wraps every surface's handler (see above).
func (a *API) Edge(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			r = headAsGet(r)
		}
		class := classOf(r)
		rc := http.NewResponseController(w)
		refuse := func(format string, args ...any) {
			// The rest of the body is not read: net/http would drain it
			// after the answer, so the read ends now and the connection
			// closes.
			w.Header().Set("Connection", "close")
			_ = rc.SetReadDeadline(time.Now())
			a.refused.addrs.note(addrOf(r), time.Now())
			if class == classForm && a.cfg.FormPage != nil {
				a.cfg.FormPage(w, r, http.StatusBadRequest, fmt.Sprintf(format, args...))
				return
			}
			a.fail(w, r, errorf(engine.CodeInvalidRequest, format, args...))
		}
		if n := len(r.Header.Values("Content-Type")); n > 1 {
			// Every surface reads the first, a proxy in front may read
			// another (once.go).
			refuse("send one Content-Type header, not %d", n)
			return
		}
		if isMultipart(r) {
			refuse("multipart bodies are not accepted; no route takes a file")
			return
		}
		now := time.Now()
		switch class {
		case classStream, classProfile:
			// Long GETs with nothing to read: the server's header timeout
			// bounds the request, and a body is refused.
			if r.ContentLength != 0 {
				refuse("%s takes no request body", r.URL.Path)
				return
			}
			next.ServeHTTP(w, r)
			return
		case classMCP:
			_ = rc.SetReadDeadline(now.Add(a.cfg.RequestTimeout))
			_ = rc.SetWriteDeadline(now.Add(a.cfg.MCPWait + a.cfg.RequestTimeout))
		default:
			_ = rc.SetReadDeadline(now.Add(a.cfg.RequestTimeout))
			_ = rc.SetWriteDeadline(now.Add(a.cfg.RequestTimeout))
		}
		limit := bodyLimitOf(r, class)
		switch {
		case r.ContentLength > limit && class == classForm && limit == formBodyLimit:
			refuse("This form is larger than %d KiB, more than any form here takes: shorten what you pasted and send it again. Nothing was charged.", limit>>10)
			return
		case r.ContentLength > limit:
			refuse("request body exceeds %d bytes", limit)
			return
		}
		if r.Body != http.NoBody {
			// net/http's body for a request that declared none (most
			// reads) has nothing to bound.
			r.Body = http.MaxBytesReader(w, r.Body, limit)
			if b := a.unknownSender(r); b != nil {
				a.readUnknown(w, r, b, limit, refuse, next) // bodies.go
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// ReadMessage reads an MCP message whole, once RequireKey has checked its
// key: checked like the API's JSON (UTF-8, no member named twice), under
// the edge's read deadline, which is then lifted, since net/http cancels
// a request whose connection read times out and a tool call streams until
// its run ends.
func (a *API) ReadMessage(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		data, err := io.ReadAll(r.Body)
		if err != nil {
			w.Header().Set("Connection", "close")
			_ = rc.SetReadDeadline(time.Now())
			a.fail(w, r, errorf(engine.CodeInvalidRequest, "could not read the request body: %s", bodyProblem(err, mcpBodyLimit)))
			return
		}
		if err := jsonText(data); err != nil {
			a.fail(w, r, err)
			return
		}
		_ = rc.SetReadDeadline(time.Time{})
		r.Body = io.NopCloser(bytes.NewReader(data))
		next.ServeHTTP(w, r)
	})
}

// headAsGet is a HEAD request as the GET it asks about (RFC 9110 §9.3.2:
// the same answer without its body), so that every GET route answers it;
// net/http, which still holds the HEAD, drops the body the route writes.
// IsHead tells a route that must not write at all (an event stream takes
// its connection over) that it is answering a HEAD.
func headAsGet(r *http.Request) *http.Request {
	g := r.WithContext(context.WithValue(r.Context(), headKey, true))
	g.Method = http.MethodGet
	return g
}

const headKey ctxKey = 1

// IsHead says whether r is a HEAD answered as a GET (headAsGet).
func IsHead(r *http.Request) bool { return r.Context().Value(headKey) != nil }

func isMultipart(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return false // most reads: nothing to parse
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && strings.HasPrefix(mt, "multipart/")
}

// bodyProblem says why a body could not be read, in the client's terms.
func bodyProblem(err error, limit int64) string {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return fmt.Sprintf("it exceeds %d bytes", limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "it did not arrive in time"
	}
	return "the connection failed"
}
