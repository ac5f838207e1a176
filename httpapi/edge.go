package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/apprun/apprun/edge"
	"github.com/apprun/apprun/engine"
)

// The API's part in the edge (package edge): which requests are the
// API's, the event streams' and the profiles', how large a body each of
// its routes takes, which route reads a body before it knows its sender
// (Stripe's webhook), and the envelope the edge's refusals are shown in.
// No body is read before the caller is known: every route checks its key
// (or session, or signature) from the headers first, and a request
// refused so closes its connection unread. MCP's body is read whole once
// its key is checked (ReadMessage).

// Body limits of the API's routes.
const (
	apiBodyLimit = maxBody // JSON API: 1 MiB
	mcpBodyLimit = 1 << 20 // an MCP message carries an App's input, as a create does
)

// IsAPIPath says whether path is served by the API (the rest of the
// origin, /mcp aside, is the website's).
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

// BodyLimit is the most an API route takes: 1 MiB, or the Stripe
// webhook's own 256 KiB (a Stripe event is a few KiB).
func BodyLimit(r *http.Request) int64 {
	if r.URL.Path == "/billing/stripe/webhook" {
		return maxWebhookBody
	}
	return apiBodyLimit
}

// ReadsUnknown is the API's edge.Surface.ReadsUnknown: a Stripe event
// (signed, to a node that sells) is read before its sender is known,
// within events. One without a signature, or to a node that sells
// nothing, is refused unread by its handler.
func (a *API) ReadsUnknown(events *edge.Budget) func(r *http.Request) *edge.Budget {
	return func(r *http.Request) *edge.Budget {
		if r.Method == http.MethodPost && r.URL.Path == "/billing/stripe/webhook" &&
			a.seller().Selling() && r.Header.Get("Stripe-Signature") != "" {
			return events
		}
		return nil
	}
}

// Refuse shows a refusal of the edge in the error envelope (the API's,
// the event streams' and MCP's edge.Surface.Refuse).
func (a *API) Refuse(w http.ResponseWriter, r *http.Request, refusal edge.Refusal) {
	if refusal.Status >= 500 {
		writeJSON(w, refusal.Status, envelope{errorBody{Code: engine.CodeInternal, Message: refusal.Message}})
		return
	}
	a.fail(w, r, errorf(engine.CodeInvalidRequest, "%s", refusal.Message))
}

// NoteRefusedAddress counts a request the edge refused against its
// client's address (edge.Config.OnRefused).
func (a *API) NoteRefusedAddress(r *http.Request) { a.refused.addrs.note(addrOf(r), time.Now()) }

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
			a.fail(w, r, errorf(engine.CodeInvalidRequest, "could not read the request body: %s", edge.BodyProblem(err, mcpBodyLimit)))
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
