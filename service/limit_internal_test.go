package service

import (
	"testing"
	"time"
)

func TestLocalWindowSlides(t *testing.T) {
	w := newLocalWindows(2)
	t0 := time.Unix(1_000_000, 0)
	steps := []struct {
		at        time.Duration
		ok        bool
		wantWait  time.Duration
		remaining int
		reset     time.Duration
	}{
		{0, true, 0, 1, 60 * time.Second},
		{10 * time.Second, true, 0, 0, 50 * time.Second},
		{30 * time.Second, false, 30 * time.Second, 0, 30 * time.Second}, // the first leaves at 60s
		{60 * time.Second, true, 0, 0, 10 * time.Second},                 // it left: room for one
		{61 * time.Second, false, 9 * time.Second, 0, 9 * time.Second},   // the 10s one leaves at 70s
		{70 * time.Second, true, 0, 0, 50 * time.Second},
	}
	for _, s := range steps {
		ok, wait, remaining, reset := w.allow("k", t0.Add(s.at))
		if ok != s.ok || wait != s.wantWait || remaining != s.remaining || reset != s.reset {
			t.Fatalf("at %v: allowed %v wait %v remaining %d reset %v, want %v %v %d %v", s.at, ok, wait, remaining, reset,
				s.ok, s.wantWait, s.remaining, s.reset)
		}
	}
	w.sweep(t0.Add(200 * time.Second))
	if len(w.keys) != 0 {
		t.Fatalf("an idle key was kept: %d keys", len(w.keys))
	}
}

// BenchmarkLocalWindowFull counts reads against one key whose window is
// kept full of hits (the bench's read limit is high, so every read of a
// minute stays in the queue).
func BenchmarkLocalWindowFull(b *testing.B) {
	w := newLocalWindows(1 << 30)
	now := time.Now()
	for i := range 1_000_000 {
		w.allow("k", now.Add(time.Duration(i)*time.Microsecond))
	}
	now = now.Add(time.Second)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		w.allow("k", now.Add(time.Duration(i)*50*time.Microsecond))
	}
}
