package edge

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"time"
)

// Some routes must read a body before they can know who sent it: a
// website's sign-in and sign-up forms (the credentials are the body),
// Stripe's webhook (its signature covers the body). What they hold is
// bounded whatever the connection caps (which a proxy in front turns
// off): the edge reads such a body itself, within BodyReadWait, into one
// buffer of the size it announces, only once it has reserved that size
// from the route's Budget (a surface's ReadsUnknown says which). A
// request that finds no room is refused 503 with Retry-After at once, its
// body unread. (Held open, 1,500 sign-ins grew a node without the
// per-address cap by 225 MiB, and by as much again as io.ReadAll gave up
// on them.)

// BodyReadWait bounds the read of a body from an unknown sender: a form
// or a Stripe event is a few hundred bytes to a few KiB.
const BodyReadWait = 10 * time.Second

// BudgetLimits size a Budget.
type BudgetLimits struct {
	Total   int64 // bytes of such bodies being read or held at once (default 8 MiB)
	PerAddr int64 // of which one client address (0: no share; behind a proxy)
}

// Budget is what is reserved of BudgetLimits, in all and by address.
type Budget struct {
	limits BudgetLimits
	mu     sync.Mutex
	used   int64
	byAddr map[string]int64
}

// NewBudget makes a budget of limits.
func NewBudget(l BudgetLimits) *Budget {
	if l.Total <= 0 {
		l.Total = 8 << 20
	}
	return &Budget{limits: l, byAddr: map[string]int64{}}
}

// take reserves n bytes for addr, or reports that there is no room.
func (b *Budget) take(addr string, n int64) bool {
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
func (b *Budget) give(addr string, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if b.byAddr[addr] -= n; b.byAddr[addr] <= 0 {
		delete(b.byAddr, addr)
	}
}

// readUnknown reads the body of a request from an unknown sender within
// its budget b, and hands the surface a request whose body is that
// buffer; it refuses the request when there is no room or the body does
// not come in time.
func (e *Edge) readUnknown(w http.ResponseWriter, r *http.Request, b *Budget, limit int64, s *Surface,
	refuse func(status int, reason Reason, limit int64, format string, args ...any)) {
	n := r.ContentLength
	if n < 0 { // not announced (chunked): room for the most it may be
		n = limit
	}
	addr := ClientAddr(r.RemoteAddr)
	if !b.take(addr, n) {
		w.Header().Set("Retry-After", "1")
		refuse(http.StatusServiceUnavailable, ReasonBusy, 0,
			"This node is reading as many forms and events from senders it does not know yet as it holds at once: try again in a second.")
		return
	}
	defer b.give(addr, n)
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(min(BodyReadWait, e.cfg.RequestTimeout)))
	var body []byte
	var err error
	if r.ContentLength >= 0 {
		// One buffer of the announced size: net/http's body ends there.
		body = make([]byte, n)
		_, err = io.ReadFull(r.Body, body)
	} else {
		body, err = io.ReadAll(r.Body) // within the limit
	}
	if err != nil {
		refuse(http.StatusBadRequest, ReasonUnreadable, limit, "could not read the request body: %s", BodyProblem(err, limit))
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	s.Handler.ServeHTTP(w, r)
}
