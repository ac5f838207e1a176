package httpapi

import (
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/apprun/apprun/edge"
	"github.com/apprun/apprun/engine"
	"golang.org/x/time/rate"
)

// Refused requests are limited too. A refusal costs the node little now
// (the key is checked before a body is read, and a refused create writes
// nothing), but a flood of them still takes its CPU, and a caller that
// is refused again and again is either broken or probing. Two budgets:
//
//   - an API key's refused writes: every answer in the 4xx range to a
//     request that is not a GET, but a 429 (a limit has answered it
//     already). Past the budget, every request of the key is answered
//     429 rate_limited before it is looked at further, until the budget
//     refills. Reads are not counted: a poller's 404s are no fault.
//   - a client address's failed key checks: every 401, and every request
//     the edge refuses before any key is checked. Past the budget, a
//     failed key check from the address is answered 429 instead of 401.
//     Nothing else from the address is refused for it: a good key, a
//     website page, a probe or Stripe's webhook from the same address
//     (a proxy, a NAT) is served.
//
// RefusalLimits sets the budgets. The counts are this node's, kept in
// memory: a restart forgets them.
type RefusalLimits struct {
	// PerKeyPerMinute is the refused writes an API key (or a website
	// session) may have in a minute; as many at once. 0: no limit.
	PerKeyPerMinute int
	// PerAddrPerMinute is the failed key checks of one client address in
	// a minute; as many at once. 0: no limit.
	PerAddrPerMinute int
}

// maxTracked bounds the callers whose refusals are counted, per kind: an
// attacker with more addresses than that is not limited by address (what
// it is refused costs little anyway), and the node's memory stays bounded.
const maxTracked = 100000

// refusals counts the refused requests of keys and addresses.
type refusals struct {
	keys, addrs *budgets
}

func newRefusals(l RefusalLimits) *refusals {
	return &refusals{keys: newBudgets(l.PerKeyPerMinute), addrs: newBudgets(l.PerAddrPerMinute)}
}

// budgets are the refusal budgets of one kind of caller, by id. A caller
// with none refused recently has no entry.
type budgets struct {
	perMinute int
	mu        sync.Mutex
	by        map[string]*rate.Limiter
	notes     int
	swept     time.Time
}

func newBudgets(perMinute int) *budgets {
	return &budgets{perMinute: perMinute, by: map[string]*rate.Limiter{}}
}

// spent says how long id must wait before it may be refused again (0: it
// may now). It spends nothing.
func (b *budgets) spent(id string, now time.Time) time.Duration {
	if b.perMinute <= 0 || id == "" {
		return 0
	}
	b.mu.Lock()
	lim := b.by[id]
	b.mu.Unlock()
	if lim == nil {
		return 0
	}
	tokens := lim.TokensAt(now)
	if tokens >= 1 {
		return 0
	}
	return time.Duration((1 - tokens) / float64(lim.Limit()) * float64(time.Second))
}

// note counts one refusal of id.
func (b *budgets) note(id string, now time.Time) {
	if b.perMinute <= 0 || id == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	lim := b.by[id]
	if lim == nil {
		// Swept every 4096 new callers, and when full at most once a
		// second: a sweep walks them all.
		b.notes++
		if full := len(b.by) >= maxTracked; (full && now.Sub(b.swept) >= time.Second) || (!full && b.notes%4096 == 0) {
			b.sweep(now)
			b.swept = now
		}
		if len(b.by) >= maxTracked {
			return
		}
		lim = rate.NewLimiter(rate.Limit(float64(b.perMinute)/60), b.perMinute)
		b.by[id] = lim
	}
	lim.AllowN(now, 1)
}

// sweep forgets the callers whose budget is whole again.
func (b *budgets) sweep(now time.Time) {
	for id, lim := range b.by {
		if lim.TokensAt(now) >= float64(b.perMinute) {
			delete(b.by, id)
		}
	}
}

// addrOf is the client address a request's refusals count against.
func addrOf(r *http.Request) string { return edge.ClientAddr(r.RemoteAddr) }

// tooManyRefused is the answer to a caller past its refusal budget.
func tooManyRefused(wait time.Duration, who string) error {
	return &engine.Error{Code: engine.CodeRateLimited, RetryAfter: wholeSeconds(wait), Limit: engine.LimitRefusedPerMinute,
		Message: "too many refused requests from this " + who + " in the last minute; fix the requests, then retry after Retry-After"}
}

// wholeSeconds rounds d up to whole seconds, at least one.
func wholeSeconds(d time.Duration) time.Duration {
	return time.Duration(max(1, math.Ceil(d.Seconds()))) * time.Second
}

// noteRefusal counts an answer against the request's key (keyID, when it
// authenticated) or its address, as the budgets above say.
func (a *API) noteRefusal(r *http.Request, status int, keyID string) {
	switch {
	case keyID != "":
		if status >= 400 && status < 500 && status != http.StatusTooManyRequests && r.Method != http.MethodGet {
			a.refused.keys.note(keyID, time.Now())
		}
	case status == http.StatusUnauthorized:
		a.refused.addrs.note(addrOf(r), time.Now())
	}
}
