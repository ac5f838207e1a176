package live

import (
	"sort"
	"sync"
)

// Finished keeps the stream events of finished runs, as a catch-up read
// them from the log, so that the next resume of the run is served from
// memory. A finished run's log never changes (a terminal event is the last
// its subject ever takes: every later write expects an earlier sequence
// and is refused), until the run expires and its log is removed, which
// drops it here (retention.go) and, on every node, from the read models a
// stream checks before it follows.
type Finished struct {
	mu     sync.Mutex
	runs   map[string]*finishedLog
	events int
}

// finishedLog is a finished run's stream events after sequence base, in
// order, ending with the terminal one.
type finishedLog struct {
	base   uint64
	events []StreamEvent
}

// maxFinishedEvents bounds the events kept (about 200 bytes each): the
// oldest half is dropped when they would exceed it.
const maxFinishedEvents = 250_000

// After returns the events of the run After seq, and whether they are
// known.
func (c *Finished) After(runNo string, seq uint64) ([]StreamEvent, bool) {
	c.mu.Lock()
	l := c.runs[runNo]
	c.mu.Unlock()
	if l == nil || seq < l.base {
		return nil, false
	}
	i := sort.Search(len(l.events), func(i int) bool { return l.events[i].Seq > seq })
	return l.events[i:], true
}

// Keep remembers events, the run's log after base, if they end it.
func (c *Finished) Keep(runNo string, base uint64, events []StreamEvent) {
	if len(events) == 0 || !events[len(events)-1].Terminal || len(events) > maxFinishedEvents/2 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil {
		c.runs = map[string]*finishedLog{}
	}
	if old := c.runs[runNo]; old != nil {
		if old.base <= base {
			return
		}
		c.events -= len(old.events)
	}
	for no, l := range c.runs { // map order: an arbitrary half goes
		if c.events+len(events) <= maxFinishedEvents {
			break
		}
		delete(c.runs, no)
		c.events -= len(l.events)
	}
	c.runs[runNo] = &finishedLog{base: base, events: events}
	c.events += len(events)
}

func (c *Finished) Drop(runNo string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.runs[runNo]; l != nil {
		c.events -= len(l.events)
		delete(c.runs, runNo)
	}
}
