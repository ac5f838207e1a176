package projections

import "sync"

// maxCached bounds each cache; when full, an arbitrary entry makes room.
const maxCached = 50_000

// recordCache keeps decoded records that every request reads (API keys,
// runs) in memory in front of bbolt. It is derived state like the file:
// the applier drops an entry whenever a batch changes the record, and a
// reader fills an entry only when no batch was applied between its read
// and the fill, so a stale record never enters.
type recordCache[V any] struct {
	mu      sync.Mutex
	applied uint64 // the last batch whose changes were dropped
	m       map[string]V
}

func newRecordCache[V any](applied uint64) *recordCache[V] {
	return &recordCache[V]{applied: applied, m: map[string]V{}}
}

func (c *recordCache[V]) get(id string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[id]
	return v, ok
}

// fill caches v, read in a transaction that saw applied sequence readAt.
func (c *recordCache[V]) fill(id string, v V, readAt uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if readAt != c.applied {
		return // a batch landed since the read: v may be stale
	}
	if len(c.m) >= maxCached {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[id] = v
}

// changed drops what a committed batch changed (all entries when all is
// true) and records the batch's last sequence.
func (c *recordCache[V]) changed(applied uint64, ids []string, all bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if all {
		clear(c.m)
	}
	for _, id := range ids {
		delete(c.m, id)
	}
	c.applied = applied
}
