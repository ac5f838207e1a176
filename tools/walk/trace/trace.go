// Package trace records the order in which apprun's functions are entered
// on one goroutine, for make walk. Nothing imports it in the source tree:
// tools/walk/overlay writes copies of apprun's files whose every function
// begins with a call of Enter, and make walk builds with those copies.
package trace

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
)

// Stop is one function entered: its file, relative to the module, and
// its name (a function literal's is its enclosing function's).
type Stop struct{ File, Func string }

// Record is one recording; one is open at a time.
type Record struct {
	first Stop   // the entry that begins it
	owner uint64 // the goroutine that made that entry; 0 before
	stops []Stop
}

var (
	armed atomic.Bool
	mu    sync.Mutex
	open  *Record
)

// Enter records that fn in file was entered, while a record is open,
// from the first entry of the function Start named on, on that entry's
// goroutine.
func Enter(file, fn string) {
	if !armed.Load() {
		return
	}
	g, s := goroutine(), Stop{file, fn}
	mu.Lock()
	defer mu.Unlock()
	if open == nil {
		return
	}
	if open.owner == 0 && s == open.first {
		open.owner = g
	}
	if open.owner != 0 && g == open.owner {
		open.stops = append(open.stops, s)
	}
}

// Start opens a record, ending any open one: it begins when fn in file is
// entered, and follows that goroutine.
func Start(file, fn string) *Record {
	r := &Record{first: Stop{file, fn}}
	mu.Lock()
	open = r
	mu.Unlock()
	armed.Store(true)
	return r
}

// End closes the record, if it is open, and returns its stops.
func (r *Record) End() []Stop {
	mu.Lock()
	defer mu.Unlock()
	if open == r {
		open = nil
		armed.Store(false)
	}
	return r.stops
}

// goroutine is the calling goroutine's id, from its stack's first line
// ("goroutine 7 [running]:"): slow, and taken only while armed.
func goroutine() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	n, _ := strconv.ParseUint(string(b), 10, 64)
	return n
}
