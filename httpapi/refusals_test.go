package httpapi

import (
	"fmt"
	"testing"
	"time"
)

// A caller may be refused its budget's worth at once, then one more each
// 60/budget seconds; one with nothing refused recently has no entry.
func TestARefusalBudgetSpendsAndRefills(t *testing.T) {
	t.Parallel()
	b := newBudgets(60)
	now := time.Unix(1000, 0)
	for i := range 60 {
		if wait := b.spent("k", now); wait != 0 {
			t.Fatalf("refusal %d: spent already (wait %s)", i+1, wait)
		}
		b.note("k", now)
	}
	wait := b.spent("k", now)
	if wait <= 0 || wait > time.Second {
		t.Fatalf("after 60 refusals at once: wait %s, want up to 1s (60 a minute)", wait)
	}
	if b.spent("other", now) != 0 {
		t.Fatal("another caller is spent too")
	}
	if w := b.spent("k", now.Add(wait)); w != 0 {
		t.Fatalf("after the wait: still spent (%s)", w)
	}
	b.sweep(now.Add(time.Minute))
	if len(b.by) != 0 {
		t.Fatalf("a budget whole again is kept: %d entries", len(b.by))
	}
	if off := newBudgets(0); off.spent("k", now) != 0 {
		t.Fatal("a budget of 0 limits")
	}
}

// The callers counted are bounded: past maxTracked, a new one is not
// counted (and not limited), and memory stays bounded.
func TestTheCallersCountedAreBounded(t *testing.T) {
	t.Parallel()
	b := newBudgets(1)
	now := time.Unix(1000, 0)
	for i := range maxTracked + 10 {
		b.note(fmt.Sprint(i), now)
	}
	if len(b.by) > maxTracked {
		t.Fatalf("%d callers counted, want at most %d", len(b.by), maxTracked)
	}
}
