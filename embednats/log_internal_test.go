package embednats

import (
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
)

// The server's words that say its store takes no more writes, as
// nats-server 2.15 writes them (TestAFullDiskTakesTheNodeOutOfServiceUntilItRestarts
// meets the first on a real full disk), and words that must not: the
// staging store of one atomic batch fails alone, and heals once there is
// space (the batch is refused, nothing stored).
func TestTheServersStoreFailuresAreNoted(t *testing.T) {
	for msg, want := range map[string]bool{
		"JetStream stream '$G > APPRUN' critical write error: write /d/1.blk: no space left on device":         true,
		"JetStream consumer '$G > APPRUN > apprun-executor' critical write error: no space left on device":     true,
		"JetStream cluster meta group critical write error: no space left on device":                           false, // a cluster's: another member takes over
		"JetStream out of file resources, will be DISABLED":                                                    true,
		"File system permission denied while writing, disabling JetStream":                                     true,
		"Filestore [3yM0Tz] Critical write error: write /d/batches/3yM0Tz/msgs/1.blk: no space left on device": false,
		"JetStream failed to store a msg on stream '$G > APPRUN': no space left on device":                     false, // followed by the stream's own line
		"Readiness check failed: JetStream not current":                                                        false,
	} {
		var failed atomic.Pointer[string]
		var out strings.Builder
		l := serverLog{l: slog.New(slog.NewTextHandler(&out, nil)), failed: &failed}
		l.Errorf("%s", msg)
		if got := failed.Load() != nil; got != want {
			t.Errorf("%q: noted %v, want %v", msg, got, want)
		}
		if !strings.Contains(out.String(), "level=ERROR") {
			t.Errorf("%q: logged %q, want it at error level", msg, out.String())
		}
	}
	// A cluster member (no place to note) only logs: its streams move to
	// another member.
	var out strings.Builder
	serverLog{l: slog.New(slog.NewTextHandler(&out, nil))}.Errorf("JetStream out of file resources, will be DISABLED")
	if !strings.Contains(out.String(), "will be DISABLED") {
		t.Errorf("a cluster member's store failure: logged %q", out.String())
	}
}
