package live

import (
	"testing"
)

func TestFinishedLogsServeOnlyWhatTheyHold(t *testing.T) {
	var c Finished
	evs := []StreamEvent{{Seq: 11}, {Seq: 12}, {Seq: 15, Terminal: true}}
	c.Keep("run_unfinished", 10, evs[:2])
	if _, ok := c.After("run_unfinished", 10); ok {
		t.Fatal("a log that does not end its run was kept")
	}
	c.Keep("run_a", 10, evs)
	for _, tc := range []struct {
		after uint64
		want  int
		ok    bool
	}{{9, 0, false}, {10, 3, true}, {11, 2, true}, {13, 1, true}, {15, 0, true}} {
		got, ok := c.After("run_a", tc.after)
		if ok != tc.ok || len(got) != tc.want || (tc.want > 0 && got[len(got)-1].Seq != 15) {
			t.Fatalf("after %d: %v %v, want %d events (%v)", tc.after, got, ok, tc.want, tc.ok)
		}
	}
	c.Keep("run_a", 12, evs[2:]) // a narrower read does not replace a wider one
	if got, ok := c.After("run_a", 10); !ok || len(got) != 3 {
		t.Fatalf("after a narrower keep: %v %v", got, ok)
	}
	c.Drop("run_a")
	if _, ok := c.After("run_a", 10); ok || c.events != 0 {
		t.Fatalf("dropped run still served (%d events counted)", c.events)
	}
	long := make([]StreamEvent, maxFinishedEvents/2)
	for i := range long {
		long[i].Seq = uint64(i + 1)
	}
	long[len(long)-1].Terminal = true
	for _, no := range []string{"run_1", "run_2", "run_3"} {
		c.Keep(no, 0, long)
	}
	if c.events > maxFinishedEvents {
		t.Fatalf("%d events kept, above the bound of %d", c.events, maxFinishedEvents)
	}
	if _, ok := c.After("run_3", 0); !ok {
		t.Fatal("the newest log was not kept")
	}
}
