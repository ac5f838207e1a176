package store

import (
	"strings"
	"sync"

	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/subjects"
)

// lastCache keeps the newest message of the subjects an admission reads
// (accounts, prices, platform slots, webhook endpoints) as this node last
// wrote or read them, so an admission needs no read from the log.
//
// Why it is exact:
//   - A cached account, price or slot only feeds a compare-and-set: the
//     admission's write expects the sequence it read, so a message this
//     node has not seen (another node's write) makes the write fail,
//     nothing stored, and the retry reads the log.
//   - A refusal (402, 409, 429 concurrency) is never made from the cache:
//     it is confirmed by a read of the log first.
//   - Webhook endpoints are no compare-and-set; their cache is used only on
//     a standalone node, where every write to the log is this node's and
//     passes through here.
//
// Every write updates it (store.append): the subjects of a stored append
// take its sequences, those of a failed or unanswered one are dropped.
type lastCache struct {
	mu sync.Mutex
	m  map[string]port.Message // Seq 0: no message on the subject
}

// maxCached bounds the cache; it is emptied when full (a miss is a read).
const maxCached = 1 << 17

// cacheable reports whether subject is one the cache keeps.
func cacheable(subject string) bool {
	return strings.HasPrefix(subject, subjects.AccountPrefix) || strings.HasPrefix(subject, subjects.PricePrefix) ||
		strings.HasPrefix(subject, subjects.PriceCopyPrefix) ||
		strings.HasPrefix(subject, subjects.SlotPrefix) || strings.HasPrefix(subject, subjects.WHEndpointsPrefix)
}

func (c *lastCache) get(subject string) (port.Message, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.m[subject]
	return m, ok
}

// put keeps m unless a newer message of its subject is known.
func (c *lastCache) put(m port.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[m.Subject]; ok && old.Seq > m.Seq {
		return
	}
	if c.m == nil || len(c.m) >= maxCached {
		c.m = make(map[string]port.Message)
	}
	c.m[m.Subject] = m
}

func (c *lastCache) drop(subject string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, subject)
}
