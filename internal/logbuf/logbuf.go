// Package logbuf is a bytes.Buffer safe for concurrent use: what a test
// gives a logger that writes from goroutines of its own (a node serving,
// an engine executing, a store applying) and then reads.
package logbuf

import (
	"bytes"
	"sync"
)

// Buffer collects writes under a lock; its zero value is ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
