package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The load tool runs every scenario end to end against real servers it
// starts from the real binary, at a size that takes seconds. Figures are
// not asserted (they are benchmarks); a scenario that fails is.
func TestEveryScenarioRunsAtSmallScale(t *testing.T) {
	t.Parallel() // beside the soak's test: both mostly wait on child processes
	profiles := t.TempDir()
	cfg := Config{Binary: testBinary(t), Duration: 1500 * time.Millisecond, // the stream scenario's runs tick once a second
		ServerProfiles:    profiles, // the phases this short profile nothing but the rebuild and the runs
		CreateConcurrency: 4, Accounts: 4,
		// More streams than an account's default cap (40): a cap the
		// bench server does not lift fails the stream scenario.
		ReadConcurrency: 4, Streams: 60, StreamRuns: 2, ReplayEvents: 3000, ResumeEvents: 30, ResumeLongEvents: 300, Runs: 5,
		// A few hundred streams over the cluster's three client processes.
		ClusterStreams: 300, ClusterStreamRuns: 6}
	// Each scenario starts its own servers on free ports: side by side,
	// they take the time of the longest, much of it spent waiting.
	t.Run("scenarios", func(t *testing.T) {
		for _, name := range Scenarios {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				r := Run(ctx, cfg, name)
				if len(r.Scenarios) != 1 {
					t.Fatalf("ran %d scenarios, want 1", len(r.Scenarios))
				}
				s := r.Scenarios[0]
				if s.Err != "" {
					t.Errorf("scenario %s: %s", s.Name, s.Err)
				}
				if len(s.Figures) == 0 {
					t.Errorf("scenario %s measured nothing", s.Name)
				}
				for _, n := range s.Notes {
					t.Logf("%s: %s", s.Name, n)
				}
			})
		}
	})
	for _, name := range []string{"rebuild.prof", "run.prof"} {
		if fi, err := os.Stat(filepath.Join(profiles, name)); err != nil || fi.Size() == 0 {
			t.Errorf("--server-profiles wrote no %s: %v", name, err)
		}
	}
}

// testBinary is the apprun binary the tests start servers from: make
// test's, built once for every test, or one built here.
func testBinary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("APPRUN_TEST_BINARY"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "apprun")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/apprun").CombinedOutput(); err != nil {
		t.Fatalf("build apprun: %v\n%s", err, out)
	}
	return bin
}
