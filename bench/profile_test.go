package bench

import (
	"os"
	"path/filepath"
	"testing"
)

// Go runs one CPU profile at a time: a second one is refused, and leaves
// no empty file that would read as a profile with no samples.
func TestASecondCPUProfileIsRefusedAndLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	first := filepath.Join(dir, "first.prof")
	stop, err := StartCPUProfile(first)
	if err != nil {
		t.Fatal(err)
	}
	second := filepath.Join(dir, "second.prof")
	if _, err := StartCPUProfile(second); err == nil {
		t.Fatal("a second profile started beside the first")
	}
	if _, err := os.Stat(second); !os.IsNotExist(err) {
		t.Fatalf("the refused profile left %s behind (%v)", second, err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(first); err != nil || st.Size() == 0 {
		t.Fatalf("the first profile: %v, %v", st, err)
	}
}
