package billing

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/apprun/apprun/engine"
)

// What a node remembers of the Checkout Sessions it made, so that a
// buyer (or a client in a loop) does not make a new one on every click:
//
//   - an account's open session for a pack is given again while it has
//     at least ReuseMargin left before it expires, and until it is paid
//     (a purchase in the log, on any node) or its
//     checkout.session.completed reaches this node;
//   - an account makes at most CheckoutsPerHour new sessions in any hour
//     (attempts at Stripe, failed ones included); past that it is
//     answered rate_limited, with when the oldest leaves the hour, and
//     nothing is asked of Stripe;
//   - one Checkout of an account at a time on this node, so concurrent
//     clicks make one session.
//
// It lives in the node's memory, like the sign-in throttles: a restart
// forgets it (a new session, counted afresh), and each node of a cluster
// keeps its own (n nodes: up to n open sessions per account and pack,
// n × CheckoutsPerHour an hour).
const (
	// SessionLife is the expires_at given to a new session (Stripe's
	// minimum is 30 minutes, its default 24 hours).
	SessionLife = time.Hour
	// ReuseMargin is how long a session must still have to be given
	// again: time for the buyer to pay.
	ReuseMargin = 10 * time.Minute
	// CheckoutsPerHour bounds the new sessions of one account per node.
	CheckoutsPerHour = 10
)

type openSession struct {
	Session
	pack    string
	expires time.Time
}

// accountCheckouts is one account's memory. turn is held by the one
// Checkout of the account in progress; the rest is guarded by
// checkouts.mu.
type accountCheckouts struct {
	turn    chan struct{}
	users   int // Checkouts holding or waiting for turn
	open    []openSession
	created []time.Time // new sessions in the last hour, oldest first
}

type checkouts struct {
	mu    sync.Mutex
	by    map[string]*accountCheckouts
	calls int
}

func newCheckouts() *checkouts { return &checkouts{by: map[string]*accountCheckouts{}} }

// acquire takes the account's turn, or gives up with ctx.
func (c *checkouts) acquire(ctx context.Context, account string, now time.Time) (*accountCheckouts, error) {
	c.mu.Lock()
	if c.calls++; c.calls%1024 == 0 {
		c.sweep(now)
	}
	a := c.by[account]
	if a == nil {
		a = &accountCheckouts{turn: make(chan struct{}, 1)}
		c.by[account] = a
	}
	a.users++
	c.mu.Unlock()
	select {
	case a.turn <- struct{}{}:
		return a, nil
	case <-ctx.Done():
		c.release(a, false)
		return nil, ctx.Err()
	}
}

// release gives the turn back (when held).
func (c *checkouts) release(a *accountCheckouts, held bool) {
	if held {
		<-a.turn
	}
	c.mu.Lock()
	a.users--
	c.mu.Unlock()
}

// reusable is the account's open session for pack with ReuseMargin left.
func (c *checkouts) reusable(a *accountCheckouts, pack string, now time.Time) (Session, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range a.open {
		if o.pack == pack && o.expires.Sub(now) >= ReuseMargin {
			return o.Session, true
		}
	}
	return Session{}, false
}

// wait is how long until the account may make another session (0: now).
func (c *checkouts) wait(a *accountCheckouts, now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	a.prune(now)
	if len(a.created) < CheckoutsPerHour {
		return 0
	}
	return a.created[0].Add(time.Hour).Sub(now)
}

// count records an attempt at a new session.
func (c *checkouts) count(a *accountCheckouts, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a.created = append(a.created, now)
}

// remember keeps a new session as the account's open one for its pack.
func (c *checkouts) remember(a *accountCheckouts, o openSession) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := a.open[:0]
	for _, x := range a.open {
		if x.pack != o.pack {
			kept = append(kept, x)
		}
	}
	a.open = append(kept, o)
}

// forget drops the session id of account (completed, or paid).
func (c *checkouts) forget(account, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.by[account]
	if a == nil {
		return
	}
	kept := a.open[:0]
	for _, x := range a.open {
		if x.ID != id {
			kept = append(kept, x)
		}
	}
	a.open = kept
}

// prune drops what no longer counts: expired sessions, and attempts
// older than an hour.
func (a *accountCheckouts) prune(now time.Time) {
	i := 0
	for i < len(a.created) && !a.created[i].Add(time.Hour).After(now) {
		i++
	}
	a.created = a.created[i:]
	kept := a.open[:0]
	for _, x := range a.open {
		if x.expires.After(now) {
			kept = append(kept, x)
		}
	}
	a.open = kept
}

// sweep forgets the accounts with nothing left to remember.
func (c *checkouts) sweep(now time.Time) {
	for id, a := range c.by {
		if a.prune(now); a.users == 0 && len(a.open) == 0 && len(a.created) == 0 {
			delete(c.by, id)
		}
	}
}

// checkoutsLimited is the answer past CheckoutsPerHour.
func checkoutsLimited(wait time.Duration) error {
	wait = wait.Truncate(time.Second) + time.Second
	return &engine.Error{Code: engine.CodeRateLimited, RetryAfter: wait, Limit: engine.LimitCheckoutsPerHour,
		Message: fmt.Sprintf("this account opened %d checkouts in the last hour, the most it may; the next can be opened in %s (an open checkout of a pack is given again meanwhile)",
			CheckoutsPerHour, wait)}
}
