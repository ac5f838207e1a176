package projections

import (
	"runtime/debug"
	"sync"
)

// While a store catches up on a long log (Start, until Ready), the garbage
// collector runs a quarter as often: catchUpGC instead of Go's default 100
// as its target percentage. A rebuild allocates about 3.5 KB an event that
// dies in the same transaction, and its live heap is small (bbolt's pages
// are mapped, not allocated), so it trades a few times a small heap for
// the collector's share of two busy cores: a rebuild of the bench's log
// went from a median 157k to 189k events/s, its peak heap from about 130
// to about 330 MiB (BENCHMARKS.md, twelfth pass). It is the process's
// setting, so it is held by a count: the last store to catch up restores
// what was there. A percentage already higher (GOGC) or off is left alone.
const catchUpGC = 400

// catchUpFrom is how far behind the log a store must start (events) for
// its catch-up to relax the collector: a node that restarts with its file
// in place does not. Tests lower it.
var catchUpFrom uint64 = 50_000

// setGCPercent is debug.SetGCPercent; tests watch it.
var setGCPercent = debug.SetGCPercent

var relaxed struct {
	sync.Mutex
	holders int
	before  int // the percentage before the first holder
}

// relaxGC raises the collector's percentage to catchUpGC until the
// returned func is called (once; more calls do nothing).
func relaxGC() (restore func()) {
	relaxed.Lock()
	if relaxed.holders == 0 {
		relaxed.before = setGCPercent(catchUpGC)
		if relaxed.before < 0 || relaxed.before >= catchUpGC {
			setGCPercent(relaxed.before) // GOGC=off or higher: kept
		}
	}
	relaxed.holders++
	relaxed.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			relaxed.Lock()
			defer relaxed.Unlock()
			if relaxed.holders--; relaxed.holders == 0 && relaxed.before >= 0 && relaxed.before < catchUpGC {
				setGCPercent(relaxed.before)
			}
		})
	}
}
