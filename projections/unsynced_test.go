package projections_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apprun/apprun/internal/logbuf"
	"github.com/apprun/apprun/projections"
)

// needsBootID skips where the kernel has no boot id: there every commit
// is fsynced and no marker is written.
func needsBootID(t *testing.T) string {
	t.Helper()
	boot := projections.BootID()
	if boot == "" {
		t.Skip("no kernel boot id here: commits are fsynced")
	}
	return boot
}

// While a store is open its file carries the marker of this boot; a clean
// close fsyncs the file and removes it.
func TestAnOpenFileIsMarkedUnsyncedUntilItsCleanClose(t *testing.T) {
	t.Parallel()
	boot := needsBootID(t)
	f := setup(t)
	s := f.open(t)
	marked, err := os.ReadFile(projections.UnsyncedMarker(f.path))
	if err != nil {
		t.Fatalf("an open store's file has no marker: %v", err)
	}
	if got := strings.TrimSpace(string(marked)); got != boot {
		t.Fatalf("marker holds %q, want this boot's id %q", got, boot)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(projections.UnsyncedMarker(f.path)); !os.IsNotExist(err) {
		t.Fatalf("marker after a clean close: %v, want none", err)
	}
}

// A file whose marker is from another boot was being written, unsynced,
// when the machine stopped: it is moved aside and rebuilt from the log,
// with a warning, and the rebuilt file equals the one before.
func TestAFileLeftUnsyncedByAnotherBootIsRebuilt(t *testing.T) {
	t.Parallel()
	boot := needsBootID(t)
	f, want, last := damagedFixture(t)
	leaveMarker(t, f.path, "0d1e7a5e-another-boot")

	var logs logbuf.Buffer
	s, err := projections.Open(f.path, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.Contains(logs.String(), "damaged file moved aside") || !strings.Contains(logs.String(), "never fsynced") {
		t.Fatalf("no warning that says why:\n%s", logs.String())
	}
	if aside, _ := filepath.Glob(f.path + ".damaged-*"); len(aside) != 1 {
		t.Fatalf("moved aside: %v, want the file kept once", aside)
	}
	if s.Applied() != 0 {
		t.Fatalf("the file resumed at %d instead of being rebuilt", s.Applied())
	}
	if marked, _ := os.ReadFile(projections.UnsyncedMarker(f.path)); strings.TrimSpace(string(marked)) != boot {
		t.Fatalf("the new file's marker holds %q, want this boot's %q", marked, boot)
	}
	checkRebuilt(t, f, s, last, want)
}

// A file whose marker is from this boot was left by a process that died:
// its writes are all in the kernel's page cache, and it is kept.
func TestAFileLeftUnsyncedInThisBootIsKept(t *testing.T) {
	t.Parallel()
	boot := needsBootID(t)
	f, _, last := damagedFixture(t)
	leaveMarker(t, f.path, boot)

	var logs logbuf.Buffer
	s, err := projections.Open(f.path, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if aside, _ := filepath.Glob(f.path + ".damaged-*"); len(aside) != 0 || strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("a file a process left was moved aside: %v\n%s", aside, logs.String())
	}
	if s.Applied() != last {
		t.Fatalf("applied %d after reopening, want %d", s.Applied(), last)
	}
}

// The audit opens the file without repairing it: one the machine stopped
// under is reported as damage.
func TestTheAuditFindsAFileLeftUnsyncedByAnotherBoot(t *testing.T) {
	t.Parallel()
	needsBootID(t)
	f, _, _ := damagedFixture(t)
	leaveMarker(t, f.path, "0d1e7a5e-another-boot")
	s, damage, err := projections.OpenExclusive(f.path)
	if err != nil {
		t.Fatal(err)
	}
	if s != nil {
		s.Close()
	}
	if s != nil || len(damage) != 1 || !strings.Contains(damage[0].Problem, "never fsynced") {
		t.Fatalf("audit open: store %v, damage %v; want no store and the torn file named", s != nil, damage)
	}
}

// leaveMarker leaves the marker an unsynced file has while open, as a
// process that died (or a machine that stopped) leaves it.
func leaveMarker(t *testing.T, path, boot string) {
	t.Helper()
	if err := os.WriteFile(projections.UnsyncedMarker(path), []byte(boot+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A node refused the file (the audit holds it) leaves no marker: the file
// it never wrote stays a clean one, not one a later boot would rebuild.
func TestAnOpenRefusedTheFileLeavesNoMarker(t *testing.T) {
	t.Parallel()
	needsBootID(t)
	f, _, _ := damagedFixture(t)
	held, damage, err := projections.OpenExclusive(f.path)
	if err != nil || len(damage) != 0 {
		t.Fatalf("audit open: %v %v", err, damage)
	}
	defer held.Close()
	if s, err := projections.Open(f.path, nil); err == nil {
		s.Close()
		t.Fatal("opened a file the audit holds")
	}
	if _, err := os.Stat(projections.UnsyncedMarker(f.path)); !os.IsNotExist(err) {
		t.Fatalf("marker left by an open that was refused: %v", err)
	}
}
