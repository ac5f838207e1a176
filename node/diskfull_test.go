//go:build linux

package node_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"

	"github.com/apprun/apprun/internal/logbuf"
)

// A disk that fills under the node's log. The embedded nats-server keeps
// a stream's first write error for good (its store refuses every later
// write, space or not, until the server restarts), and it said so only in
// a log apprun threw away: the node stayed ready, each create took 9 s to
// answer 503 (or more than the 30 s a request has, no answer at all), and
// a run that met it stayed running with its Credits held. Now the server's
// error is in the node's log, the node answers 503 at once and /readyz
// says why, and a restart once there is space again serves as before: the
// run ends, charged once. (A disk that fills under an atomic batch's
// staging alone heals by itself once there is space: batches refused
// meanwhile store nothing.)
func TestAFullDiskTakesTheNodeOutOfServiceUntilItRestarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=32m"); err != nil {
		t.Skipf("this test fills a small file system of its own, a tmpfs, which needs root: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	var logs logbuf.Buffer
	h := Start(t, WithLimits(NoLimits), WithDataDir(dir), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	a := h.Account(100)
	held := h.Create(a, RunTestApp("hold"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	events, _, _ := h.Stream(ctx, a, held)
	for ev := range events { // until the run holds, after its first step
		if ev.Event == "tool_running" {
			break
		}
	}
	cancel()

	fill := filepath.Join(dir, "fill")
	fillDisk(t, fill)
	// A grant is one write to the stream's own store (a run's writes are
	// atomic batches, staged in stores of their own first). Grants go on
	// while the store's last page has room; the first that needs a new
	// page fails, and the stream keeps the failure.
	granted, unknown := int64(0), int64(0)
	for i := 0; ; i++ {
		r := h.Do("POST", "/admin/v1/accounts/"+a.ID+"/credits", AdminToken, map[string]any{"reason": "test", "amount": 1})
		if r.Status == 503 {
			break
		}
		if r.Status == 500 && strings.Contains(string(r.Body), "may or may not have been made") {
			unknown++ // its write got no answer, and the log went down before another could learn its outcome
			break
		}
		if r.Status != 200 || i == 1000 {
			t.Fatalf("grant %d on a full disk: %d %s, want 200 until one is 503 (or 500 unknown); the node logged:\n%s", i+1, r.Status, r.Body, logs.String())
		}
		granted++
	}

	deadline := time.Now().Add(30 * time.Second)
	var ready Response
	for {
		if ready = h.Do("GET", "/readyz", "", nil); ready.Status == 503 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz with the log's store failed: %d %s, want 503; the node logged:\n%s", ready.Status, ready.Body, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(string(ready.Body), "store failed a write") {
		t.Errorf("/readyz: %s, want the reason: the log's store failed a write", ready.Body)
	}
	if r := h.Do("GET", "/healthz", "", nil); r.Status != 503 || !strings.Contains(string(r.Body), "restart") {
		t.Errorf("/healthz with the log's store failed: %d %s, want 503 asking for a restart", r.Status, r.Body)
	}
	if r := h.Do("POST", "/api/v1/runs", a.Key, RunTestApp("ok")); r.Status != 503 || r.ErrorCode(t) != "internal_error" {
		t.Errorf("a create with the log's store failed: %d %s, want 503", r.Status, r.Body)
	}
	if !strings.Contains(logs.String(), "no space left on device") || !strings.Contains(logs.String(), "component=nats") {
		t.Errorf("the node's log does not say what the server met:\n%s", logs.String())
	}

	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	if r := h.Do("GET", "/readyz", "", nil); r.Status != 503 {
		t.Errorf("/readyz with space again but no restart: %d %s, want 503 (the server keeps its store's failure)", r.Status, r.Body)
	}
	h.Restart()
	h.ReleaseHeld()
	if run := h.WaitRun(a, held); run["status"] != "completed" {
		t.Fatalf("the held run after the restart: %v", run)
	}
	if balance, active := h.Balance(a); balance < 90+granted || balance > 90+granted+unknown || active != 0 {
		t.Errorf("after the restart: balance %d, %d active, want %d (one run charged once, %d grants made, %d unknown, the refused one not made) and none",
			balance, active, 90+granted, granted, unknown)
	}
}

// fillDisk writes path until its file system is full.
func fillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}
