package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apprun/apprun/projections"
	bolt "go.etcd.io/bbolt"
)

func TestAuditCommandPassesOnAHealthyDataDirAndCatchesDrift(t *testing.T) {
	h := start(t, withLimits(noLimits))
	a, _ := activity(t, h)
	var out bytes.Buffer
	if err := auditCommand([]string{"--data", h.dir}, &out); err == nil || !strings.Contains(err.Error(), "still running") {
		t.Fatalf("audit beside a running node: %v", err)
	}
	h.stop()
	out.Reset()
	if err := auditCommand([]string{"--data", h.dir}, &out); err != nil {
		t.Fatalf("audit of a healthy data dir failed: %v\n%s", err, out.String())
	}
	for _, want := range []string{"runs 3 (completed 2, failed 1, canceled 0, unfinished 0; 0 expired after retention)", "invariant violations 0, projection mismatches 0"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("audit output lacks %q:\n%s", want, out.String())
		}
	}
	// A read model that drifted from the log is caught.
	db, err := bolt.Open(filepath.Join(h.dir, "projections.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("accounts"))
		v := strings.Replace(string(b.Get([]byte(a.ID))), `"balance":`, `"balance":1`, 1)
		return b.Put([]byte(a.ID), []byte(v))
	})
	db.Close()
	out.Reset()
	if err := auditCommand([]string{"--data", h.dir}, &out); err == nil || !strings.Contains(out.String(), "account "+a.ID+": read model has balance") {
		t.Fatalf("drift not caught: %v\n%s", err, out.String())
	}
}

// A clean audit of nothing is the worst answer for a billing review: an
// empty data directory fails, and so does one with read models but no log
// (a cluster member's directory opened without its cluster).
func TestAuditOfAnEmptyOrForeignDataDirFails(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := auditCommand([]string{"--data", t.TempDir()}, &out); err == nil || !strings.Contains(err.Error(), "holds no apprun data") {
		t.Fatalf("audit of an empty data dir: %v, want a failure saying it holds no apprun data\n%s", err, out.String())
	}
	member := t.TempDir()
	p, err := projections.Open(filepath.Join(member, "projections.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	out.Reset()
	err = auditCommand([]string{"--data", member}, &out)
	if err == nil || !strings.Contains(err.Error(), "no event log found") {
		t.Fatalf("audit of read models without a log: %v, want a failure naming the missing log\n%s", err, out.String())
	}
}
