package httpapi

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/apprun/apprun/engine"
)

// streamRegistry holds this node's open event streams by key and counts
// them by account: a key has at most perKey, an account (all its keys and
// its website session) at most perAccount, so making keys does not make
// streams. It also ends a revoked key's streams (watchRevocations).
type streamRegistry struct {
	mu                 sync.Mutex
	perKey, perAccount int
	byKey              map[string]map[*stream]struct{}
	byAccount          map[string]int
}

func newStreamRegistry(perKey, perAccount int) *streamRegistry {
	return &streamRegistry{perKey: perKey, perAccount: perAccount, byKey: map[string]map[*stream]struct{}{}, byAccount: map[string]int{}}
}

// add registers s, or refuses with concurrency_limit.
func (g *streamRegistry) add(s *stream) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case len(g.byKey[s.key]) >= g.perKey:
		return &engine.Error{Code: engine.CodeConcurrencyLimit, RetryAfter: time.Second,
			Message: fmt.Sprintf("this API key already has %d event streams open; close one first", g.perKey)}
	case g.byAccount[s.account] >= g.perAccount:
		return &engine.Error{Code: engine.CodeConcurrencyLimit, RetryAfter: time.Second,
			Message: fmt.Sprintf("this account already has %d event streams open over its keys; close one first", g.perAccount)}
	}
	if g.byKey[s.key] == nil {
		g.byKey[s.key] = map[*stream]struct{}{}
	}
	g.byKey[s.key][s] = struct{}{}
	g.byAccount[s.account]++
	return nil
}

// remove gives back s's place.
func (g *streamRegistry) remove(s *stream) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.byKey[s.key][s]; !ok {
		return
	}
	delete(g.byKey[s.key], s)
	if len(g.byKey[s.key]) == 0 {
		delete(g.byKey, s.key)
	}
	if g.byAccount[s.account]--; g.byAccount[s.account] <= 0 {
		delete(g.byAccount, s.account)
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
