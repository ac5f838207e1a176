package projections

import "testing"

// A reader's record enters the cache only when no batch landed since its
// read, and a batch that changes a record drops it.
func TestRecordCacheNeverKeepsAStaleRecord(t *testing.T) {
	c := newRecordCache[string](5)
	steps := []struct {
		name   string
		do     func()
		cached bool
	}{
		{"a read older than the last batch is not kept", func() { c.fill("r", "old", 4) }, false},
		{"a read at the last batch is kept", func() { c.fill("r", "v5", 5) }, true},
		{"a batch that changes it drops it", func() { c.changed(6, []string{"r"}, false) }, false},
		{"a read from before that batch is not kept", func() { c.fill("r", "v5", 5) }, false},
		{"a read after it is", func() { c.fill("r", "v6", 6) }, true},
		{"a batch changing every record drops it", func() { c.changed(7, nil, true) }, false},
	}
	for _, s := range steps {
		s.do()
		if _, ok := c.get("r"); ok != s.cached {
			t.Fatalf("%s: cached %v, want %v", s.name, ok, s.cached)
		}
	}
}
