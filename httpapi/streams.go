package httpapi

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/apprun/apprun/engine"
)

// streamRegistry holds this node's open event streams by key and by
// account: a key has at most perKey, an account (all its keys and its
// website session) at most perAccount, so making keys does not make
// streams. It also ends a revoked key's streams (watchRevocations).
type streamRegistry struct {
	mu                 sync.Mutex
	perKey, perAccount int
	byKey, byAccount   map[string]streamSet
}

type streamSet map[*stream]struct{}

func newStreamRegistry(perKey, perAccount int) *streamRegistry {
	return &streamRegistry{perKey: perKey, perAccount: perAccount, byKey: map[string]streamSet{}, byAccount: map[string]streamSet{}}
}

// add registers s, or refuses with concurrency_limit. A key or an account
// at its cap first gives back the places of its streams whose clients
// hung up (hangup.go): nothing reads a stream's connection, so a
// reconnecting client's old stream may not have noticed yet.
func (g *streamRegistry) add(s *stream) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.byKey[s.key]) >= g.perKey {
		g.pruneLocked(g.byKey[s.key])
	}
	if len(g.byAccount[s.account]) >= g.perAccount {
		g.pruneLocked(g.byAccount[s.account])
	}
	switch {
	case len(g.byKey[s.key]) >= g.perKey:
		return &engine.Error{Code: engine.CodeConcurrencyLimit, RetryAfter: time.Second, Limit: engine.LimitStreamsPerKey,
			Message: fmt.Sprintf("this API key already has %d event streams open; close one first", g.perKey)}
	case len(g.byAccount[s.account]) >= g.perAccount:
		return &engine.Error{Code: engine.CodeConcurrencyLimit, RetryAfter: time.Second, Limit: engine.LimitStreamsPerAccount,
			Message: fmt.Sprintf("this account already has %d event streams open over its keys; close one first", g.perAccount)}
	}
	insert(g.byKey, s.key, s)
	insert(g.byAccount, s.account, s)
	return nil
}

// pruneLocked ends the streams of set whose clients hung up and gives
// back their places now (their own ends find them gone).
func (g *streamRegistry) pruneLocked(set streamSet) {
	for s := range set {
		if s.hungUp() {
			g.removeLocked(s)
			s.cancel()
		}
	}
}

// remove gives back s's place.
func (g *streamRegistry) remove(s *stream) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.removeLocked(s)
}

func (g *streamRegistry) removeLocked(s *stream) {
	if _, ok := g.byKey[s.key][s]; !ok {
		return
	}
	drop(g.byKey, s.key, s)
	drop(g.byAccount, s.account, s)
}

func insert(m map[string]streamSet, k string, s *stream) {
	if m[k] == nil {
		m[k] = streamSet{}
	}
	m[k][s] = struct{}{}
}

func drop(m map[string]streamSet, k string, s *stream) {
	delete(m[k], s)
	if len(m[k]) == 0 {
		delete(m, k)
	}
}

// apiKeys are the API keys (not sessions) with open streams.
func (g *streamRegistry) apiKeys() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]string, 0, len(g.byKey))
	for k := range g.byKey {
		if strings.HasPrefix(k, engine.PrefixKey) {
			out = append(out, k)
		}
	}
	return out
}

// revoke ends every stream key opened.
func (g *streamRegistry) revoke(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for s := range g.byKey[key] {
		s.cancel()
	}
}

// revocationCheck is how often open streams' keys are checked: a revoked
// key's streams end within it (plus the moment the read model takes to
// apply the revocation, made on any node).
const revocationCheck = 250 * time.Millisecond

// watchRevocations ends the streams of keys revoked since they opened,
// until the API closes.
func (a *API) watchRevocations() {
	t := time.NewTicker(revocationCheck)
	defer t.Stop()
	for {
		select {
		case <-a.closing:
			return
		case <-t.C:
		}
		for _, id := range a.streams.apiKeys() {
			if k, err := a.cfg.Reads.KeyByID(id); err == nil && k.Revoked {
				a.streams.revoke(id)
			}
		}
	}
}
