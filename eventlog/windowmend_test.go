package eventlog_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/embednats/natstest"
	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/eventlog"
	"github.com/apprun/apprun/port"
	"github.com/nats-io/nats.go/jetstream"
)

// openWithJS opens a store with windows on, and a JetStream handle on
// the same server for the test to break things with.
func openWithJS(t *testing.T) (*eventlog.Store, jetstream.JetStream) {
	t.Helper()
	nc := natstest.Connect(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := eventlog.Open(ctx, nc, eventlog.Config{Limits: engine.Limits{CreatePerMinute: 3, ReadsPerMinute: 5}})
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return st, js
}

// awaitUnavailable polls unavailable until want says yes, or 5 s pass.
func awaitUnavailable(t *testing.T, what string, unavailable func() error, want func(error) bool) error {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := unavailable()
		if want(err) {
			return err
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after 5s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A window lost with its server (a memory stream) is made again by the
// first count that finds it gone, and that count is counted.
func TestAWindowLostWithItsServerIsMadeAgain(t *testing.T) {
	t.Parallel()
	st, js := openWithJS(t)
	ctx := context.Background()
	w := st.Ports().Windows
	for _, name := range []string{"APPRUN_RL_CREATE", "APPRUN_RL_READ"} {
		if err := js.DeleteStream(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	if ok, remaining, _, err := w.Hit(ctx, port.WindowRead, "key_a"); err != nil || !ok || remaining != 4 {
		t.Fatalf("a read with its window gone: ok %v remaining %d %v; want it made again and counted", ok, remaining, err)
	}
	if ok, remaining, _, err := w.Hit(ctx, port.WindowCreate, "key_a"); err != nil || !ok || remaining != 2 {
		t.Fatalf("a create with its window gone: ok %v remaining %d %v; want it made again and counted", ok, remaining, err)
	}
	if err := w.Unavailable(); err != nil {
		t.Fatalf("windows made again, yet unavailable: %v", err)
	}
}

// A window that cannot be made again (here another stream took its
// subjects) fails counts at once and says why, which /readyz shows;
// once it can be, it is, without a count asking.
func TestAWindowThatCannotBeMadeAgainSaysWhy(t *testing.T) {
	t.Parallel()
	st, js := openWithJS(t)
	ctx := context.Background()
	w := st.Ports().Windows
	if err := js.DeleteStream(ctx, "APPRUN_RL_READ"); err != nil {
		t.Fatal(err)
	}
	// A subject of the window's, not the one counted: the window's
	// subjects overlap it, so it cannot be made while this stream is.
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SQUATTER", Subjects: []string{"apprun.rl.read.other"},
		Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	_, _, _, err := w.Hit(ctx, port.WindowRead, "key_a")
	if !errors.Is(err, port.ErrUnavailable) {
		t.Fatalf("a read whose window cannot be made: %v, want ErrUnavailable", err)
	}
	t.Logf("refused after %s: %v", time.Since(began).Round(time.Millisecond), err)
	why := awaitUnavailable(t, "windows that cannot be made", w.Unavailable, func(err error) bool { return err != nil })
	if !strings.Contains(why.Error(), "APPRUN_RL_READ") {
		t.Fatalf("unavailable: %v, want the window named", why)
	}
	if err := js.DeleteStream(ctx, "SQUATTER"); err != nil {
		t.Fatal(err)
	}
	awaitUnavailable(t, "windows that can be made again", w.Unavailable, func(err error) bool { return err == nil })
	if _, err := js.Stream(ctx, "APPRUN_RL_READ"); err != nil {
		t.Fatalf("the window was not made again: %v", err)
	}
}

// The event log's stream is never made again empty: gone (with a window,
// as on a server restarted without its store), the log is down, says
// why, and stays gone while the window is made again.
func TestAMissingEventLogIsReportedNotMadeAgain(t *testing.T) {
	t.Parallel()
	st, js := openWithJS(t)
	ctx := context.Background()
	for _, name := range []string{eventlog.StreamName, "APPRUN_RL_READ"} {
		if err := js.DeleteStream(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	why := awaitUnavailable(t, "the log without its stream", st.Log().Unavailable, func(err error) bool { return err != nil })
	if !strings.Contains(why.Error(), "missing") || st.Log().Available() {
		t.Fatalf("unavailable: %v (available %v), want down and the stream said missing", why, st.Log().Available())
	}
	if ok, _, _, err := st.Ports().Windows.Hit(ctx, port.WindowRead, "key_a"); err != nil || !ok {
		t.Fatalf("a read with its window gone: ok %v %v; want the window made again", ok, err)
	}
	if _, err := js.Stream(ctx, eventlog.StreamName); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("the event log's stream: %v, want it still missing", err)
	}
}
