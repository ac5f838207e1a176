package logbuf

import (
	"strings"
	"sync"
	"testing"
)

// Writers on many goroutines and a reader at once: every line arrives
// whole (and -race finds no race).
func TestConcurrentWritesArriveWhole(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("line\n"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := strings.Count(b.String(), "line\n"); got != 800 {
		t.Fatalf("%d whole lines, want 800", got)
	}
}
