package projections

import "sync"

// maxCached bounds each cache; when full, an arbitrary entry makes room.
const maxCached = 50_000

// caches keep decoded API keys and runs, the records every authenticated
// read and every status read needs, in memory in front of bbolt. They are
// derived state like the file: the applier drops an entry whenever it
// changes the record, and a reader fills an entry only when no batch was
// applied between its read and the fill, so a stale record never enters.
type caches struct {
	mu      sync.Mutex
	applied uint64 // the last batch whose changes were dropped
	keys    map[string]any
	runs    map[string]any
}

func newCaches(applied uint64) *caches {
	return &caches{applied: applied, keys: map[string]any{}, runs: map[string]any{}}
}

func (c *caches) get(m func(*caches) map[string]any, id string) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := m(c)[id]
	return v, ok
}

// fill caches v, read in a transaction that saw applied sequence readAt.
func (c *caches) fill(m func(*caches) map[string]any, id string, v any, readAt uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if readAt != c.applied {
		return // a batch landed since the read: v may be stale
	}
	mm := m(c)
	if len(mm) >= maxCached {
		for k := range mm {
			delete(mm, k)
			break
		}
	}
	mm[id] = v
}

// changed drops what a committed batch changed and records its sequence.
func (c *caches) changed(applied uint64, runs []string, keys bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range runs {
		delete(c.runs, r)
	}
	if keys {
		clear(c.keys)
	}
	c.applied = applied
}

func keyCache(c *caches) map[string]any { return c.keys }
func runCache(c *caches) map[string]any { return c.runs }
