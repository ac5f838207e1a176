package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/apprun/apprun/engine"
)

// Three routes must read a body before they can know who sent it: the
// website's sign-in and sign-up forms (the credentials are the body) and
// Stripe's webhook (its signature covers the body). What they hold is
// bounded node-wide, whatever the connection caps (which a proxy in front
// turns off): the edge reads such a body itself, within bodyReadWait,
// into one buffer of the size it announces, only once it has reserved
// that size from its route's budget: the forms' or the webhook's (apart,
// so that sign-ins held open cannot delay a payment). A request that
// finds no room is answered 503 with Retry-After at once, its body
// unread. (Held open, 1,500 sign-ins grew a node without the per-address
// cap by 225 MiB, and by as much again as io.ReadAll gave up on them.)
type BodyBudget struct {
	Total   int64 // bytes of such bodies being read or held at once, per route's budget (default 8 MiB)
	PerAddr int64 // of which one client address (0: no share; behind a proxy)
}

// bodyReadWait bounds the read of a body from an unknown sender: a form
// or a Stripe event is a few hundred bytes to a few KiB.
const bodyReadWait = 10 * time.Second

// unknownSender is the budget of r's route when it reads a body before it
// knows its sender, or nil. (A Stripe event without a signature, or to a
// node that sells nothing, is refused unread by its handler.)
func (a *API) unknownSender(r *http.Request) *bodyBudget {
	if r.Method != http.MethodPost {
		return nil
	}
	switch r.URL.Path {
	case "/signin", "/signup":
		return a.forms
	case "/billing/stripe/webhook":
		if a.seller().Selling() && r.Header.Get("Stripe-Signature") != "" {
			return a.events
		}
	}
	return nil
}

// bodyBudget is what is reserved of a BodyBudget, node-wide and by address.
type bodyBudget struct {
	limits BodyBudget
	mu     sync.Mutex
	used   int64
	byAddr map[string]int64
}

func newBodyBudget(l BodyBudget) *bodyBudget {
	if l.Total <= 0 {
		l.Total = 8 << 20
	}
	return &bodyBudget{limits: l, byAddr: map[string]int64{}}
}

// take reserves n bytes for addr, or reports that there is no room.
func (b *bodyBudget) take(addr string, n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limits.Total || (b.limits.PerAddr > 0 && b.byAddr[addr]+n > b.limits.PerAddr) {
		return false
	}
	b.used += n
	b.byAddr[addr] += n
	return true
}

// give returns what take reserved.
func (b *bodyBudget) give(addr string, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if b.byAddr[addr] -= n; b.byAddr[addr] <= 0 {
		delete(b.byAddr, addr)
	}
}

// readUnknown reads the body of a request from an unknown sender (above)
// within its budget b, and hands next a request whose body is that
// buffer. It answers for itself when there is no room or the body does
// not come in time.
func (a *API) readUnknown(w http.ResponseWriter, r *http.Request, b *bodyBudget, limit int64, refuse func(format string, args ...any), next http.Handler) {
	n := r.ContentLength
	if n < 0 { // not announced (chunked): room for the most it may be
		n = limit
	}
	addr := addrOf(r)
	if !b.take(addr, n) {
		a.busy(w, r, "This node is reading as many forms and events from senders it does not know yet as it holds at once: try again in a second.")
		return
	}
	defer b.give(addr, n)
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(min(bodyReadWait, a.cfg.RequestTimeout)))
	var body []byte
	var err error
	if r.ContentLength >= 0 {
		// One buffer of the announced size: net/http's body ends there.
		body = make([]byte, n)
		_, err = io.ReadFull(r.Body, body)
	} else {
		body, err = io.ReadAll(r.Body) // within the edge's limit
	}
	if err != nil {
		refuse("could not read the request body: %s", bodyProblem(err, limit))
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	next.ServeHTTP(w, r)
}

// busy answers 503 with Retry-After to a request it leaves unread: the
// website's page for a form, the envelope for the rest.
func (a *API) busy(w http.ResponseWriter, r *http.Request, msg string) {
	w.Header().Set("Retry-After", "1")
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	if classOf(r) == classForm && a.cfg.FormPage != nil {
		a.cfg.FormPage(w, r, http.StatusServiceUnavailable, msg)
		return
	}
	writeJSON(w, http.StatusServiceUnavailable, envelope{errorBody{engine.CodeInternal, msg}})
}
