package eventlog_test

import (
	"context"
	"testing"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/eventlog"
	"github.com/apprun/apprun/port"
)

// The shared windows count exactly and say where a key stands: remaining
// counts down to 0 and the next request is refused with how long until
// the oldest leaves; another key has its own window.
func TestSharedWindowsCountDownAndRefuse(t *testing.T) {
	t.Parallel()
	st := openStoreWith(t, eventlog.Config{Limits: engine.Limits{CreatePerMinute: 3, ReadsPerMinute: 5}})
	ctx := context.Background()
	w := st.Ports().Windows
	for i, want := range []int{2, 1, 0} {
		ok, remaining, reset, err := w.Hit(ctx, port.WindowCreate, "key_a")
		if err != nil || !ok || remaining != want || reset <= 50*time.Second || reset > time.Minute {
			t.Fatalf("create %d: ok %v remaining %d reset %s %v; want remaining %d, reset about a minute", i+1, ok, remaining, reset, err, want)
		}
	}
	ok, remaining, reset, err := w.Hit(ctx, port.WindowCreate, "key_a")
	if err != nil || ok || remaining != 0 || reset <= 50*time.Second || reset > time.Minute {
		t.Fatalf("4th create: ok %v remaining %d reset %s %v; want refused, reset about a minute", ok, remaining, reset, err)
	}
	if ok, remaining, _, err := w.Hit(ctx, port.WindowCreate, "key_b"); err != nil || !ok || remaining != 2 {
		t.Fatalf("another key: ok %v remaining %d %v; want a window of its own", ok, remaining, err)
	}
	if ok, remaining, _, err := w.Hit(ctx, port.WindowRead, "key_a"); err != nil || !ok || remaining != 4 {
		t.Fatalf("a read: ok %v remaining %d %v; want the read window", ok, remaining, err)
	}
}
