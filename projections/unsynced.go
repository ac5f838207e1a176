package projections

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Commits without fsync.
//
// The read models' bbolt file does not fsync its commits. Each commit's two
// fdatasyncs went to the disk the log's own fsyncs wait for, and under a
// stream of creates they cost a quarter of the creates a second
// (BENCHMARKS.md, "Issue 21, sixth pass"). The log is the truth and the
// file a cache of it, so what an fsync protected is only the file's
// consistency, and that holds without one as long as the kernel that took
// the writes keeps running:
//
//   - a process that dies, however abruptly, leaves every write it made in
//     the kernel's page cache, in order: the file reads as of its last
//     commit, and the applier resumes after the sequence that commit
//     recorded;
//   - a kernel that stops (a power loss, a crash of the machine) may have
//     written some of the file's pages and not others, and a file torn so
//     can read as a sound file of an older state under a newer applied
//     sequence.
//
// So while the file is open it carries a marker beside it,
// <file>.unsynced, holding the boot id of the kernel that takes its
// writes (written and fsynced before the first commit). A clean close
// fsyncs the file and then removes the marker. An open that finds a marker
// from another boot knows the machine stopped while the file had commits
// that were never fsynced: the file is damage, moved aside, and rebuilt
// from the log (Open). Where the kernel has no boot id to read, every
// commit is fsynced as before.

// bootIDFile names the running kernel's boot (Linux).
const bootIDFile = "/proc/sys/kernel/random/boot_id"

// bootID is the running kernel's boot id; "" where there is none.
func bootID() string {
	b, err := os.ReadFile(bootIDFile)
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(b))
}

func unsyncedMarker(path string) string { return path + ".unsynced" }

// tornDamage is the file's damage when its marker is from another boot,
// and nil otherwise (no marker, or one from this boot).
func tornDamage(path, boot string) []Damage {
	marked, err := os.ReadFile(unsyncedMarker(path))
	if err != nil {
		return nil // no marker: the file was closed cleanly, or never opened unsynced
	}
	if id := string(bytes.TrimSpace(marked)); boot == "" || id != boot {
		return []Damage{{Problem: fmt.Sprintf("the machine stopped (boot %s) while the file held commits that were never fsynced: they may be torn", id)}}
	}
	return nil
}

// markUnsynced writes the marker for this boot, durably: it must be on
// disk before the first commit that is not.
func markUnsynced(path, boot string) error {
	marker := unsyncedMarker(path)
	tmp := marker + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(boot + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, marker)
	}
	if err == nil {
		err = syncDir(filepath.Dir(marker))
	}
	if err != nil {
		return fmt.Errorf("projections: mark %s unsynced: %w", path, err)
	}
	return nil
}

// clearUnsynced removes the marker of a file just fsynced.
func clearUnsynced(path string) error {
	if err := os.Remove(unsyncedMarker(path)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("projections: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// closeFile closes the bbolt file. One whose commits were not fsynced is
// fsynced first, and its marker removed only once that succeeded.
func (s *Store) closeFile() error {
	if s.boot == "" {
		return s.db.Close()
	}
	err := s.db.Sync()
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("projections: close %s: %w", s.path, err)
	}
	return clearUnsynced(s.path)
}
