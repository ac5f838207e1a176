package engine_test

import (
	"bytes"
	"crypto/rand"
	"slices"
	"testing"
	"time"

	"github.com/apprun/apprun/engine"
)

// Run numbers sort by the time they were made (to the millisecond), so
// that stores keyed by them append instead of writing into random pages;
// they stay ids that ValidID accepts and subjects can carry.
func TestRunNumbersSortByTheTimeTheyWereMade(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	var times []time.Time
	for _, d := range []time.Duration{0, time.Millisecond, 2 * time.Millisecond, 31 * time.Millisecond, 32 * time.Millisecond,
		time.Second, time.Hour, 1023 * time.Millisecond, 1024 * time.Millisecond, 40 * 365 * 24 * time.Hour} {
		times = append(times, base.Add(d))
	}
	times = append(times, time.UnixMilli(0), time.UnixMilli(1<<40))
	slices.SortFunc(times, time.Time.Compare)
	var ids []string
	for _, at := range times {
		for range 3 { // several in one millisecond: distinct, after the earlier ones
			ids = append(ids, engine.NewRunNo(rand.Reader, at))
		}
	}
	for i, id := range ids {
		if !engine.ValidID(engine.PrefixRun, id) || len(id) != len(engine.PrefixRun)+26 {
			t.Fatalf("run number %q: not a valid id of %d characters", id, len(engine.PrefixRun)+26)
		}
		if i > 0 && times[i/3].After(times[(i-1)/3]) && id <= ids[i-1] {
			t.Fatalf("run number made at %s (%s) sorts before the one made at %s (%s)", times[i/3], id, times[(i-1)/3], ids[i-1])
		}
	}
	if sorted := slices.Sorted(slices.Values(ids)); len(slices.Compact(sorted)) != len(ids) {
		t.Fatal("two run numbers are equal")
	}
	// The same entropy and time make the same number: the simulation
	// replays a seed exactly.
	a, b := engine.NewRunNo(bytes.NewReader(make([]byte, 10)), base), engine.NewRunNo(bytes.NewReader(make([]byte, 10)), base)
	if a != b {
		t.Fatalf("same entropy and time: %s and %s", a, b)
	}
}
