package audit_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apprun/apprun/audit"
	. "github.com/apprun/apprun/node/nodetest"

	"github.com/apprun/apprun/projections"
	bolt "go.etcd.io/bbolt"
)

func TestAuditCommandPassesOnAHealthyDataDirAndCatchesDrift(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits))
	a, _ := Activity(t, h)
	var out bytes.Buffer
	if err := audit.Run(context.Background(), audit.Options{DataDir: h.Dir}, &out); err == nil || !strings.Contains(err.Error(), "still running") {
		t.Fatalf("audit beside a running node: %v", err)
	}
	h.Stop()
	out.Reset()
	if err := audit.Run(context.Background(), audit.Options{DataDir: h.Dir}, &out); err != nil {
		t.Fatalf("audit of a healthy data dir failed: %v\n%s", err, out.String())
	}
	for _, want := range []string{"runs 3 (completed 2, failed 1 (canceled 0), unfinished 0; 0 expired after retention)", "invariant violations 0, checkpoint findings 0, ledger stream findings 0, projection mismatches 0", "ledger stream: "} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("audit output lacks %q:\n%s", want, out.String())
		}
	}
	// A read model that drifted from the log is caught.
	rewrite(t, filepath.Join(h.Dir, "projections.db"), "accounts", a.ID, func(v []byte) []byte {
		// A record that decodes and passes its checksum, but says otherwise.
		return sealed([]byte(a.ID), []byte(strings.Replace(string(v[:len(v)-4]), `"balance":`, `"balance":1`, 1)))
	})
	out.Reset()
	if err := audit.Run(context.Background(), audit.Options{DataDir: h.Dir}, &out); err == nil || !strings.Contains(out.String(), "account "+a.ID+": read model has balance") {
		t.Fatalf("drift not caught: %v\n%s", err, out.String())
	}
}

// A clean audit of nothing is the worst answer for a billing review: an
// empty data directory fails, and so does one with read models but no log
// (a cluster member's directory opened without its cluster).
func TestAuditOfAnEmptyOrForeignDataDirFails(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := audit.Run(context.Background(), audit.Options{DataDir: t.TempDir()}, &out); err == nil || !strings.Contains(err.Error(), "holds no apprun data") {
		t.Fatalf("audit of an empty data dir: %v, want a failure saying it holds no apprun data\n%s", err, out.String())
	}
	member := t.TempDir()
	p, err := projections.Open(filepath.Join(member, "projections.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	out.Reset()
	err = audit.Run(context.Background(), audit.Options{DataDir: member}, &out)
	if err == nil || !strings.Contains(err.Error(), "no event log found") {
		t.Fatalf("audit of read models without a log: %v, want a failure naming the missing log\n%s", err, out.String())
	}
}

// sealed is a projection record as the store writes it: the value, then a
// CRC-32C of key and value.
func sealed(key, val []byte) []byte {
	sum := crc32.Update(crc32.Update(0, crc32.MakeTable(crc32.Castagnoli), key), crc32.MakeTable(crc32.Castagnoli), val)
	return binary.BigEndian.AppendUint32(append([]byte(nil), val...), sum)
}

// A damaged projections.db is an audit finding that names the entity, never
// a raw parse error; the next start rebuilds it and the audit passes again.
func TestAuditReportsADamagedProjectionAndTheNextStartRebuildsIt(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits))
	_, runs := Activity(t, h)
	h.Stop()
	path := filepath.Join(h.Dir, "projections.db")
	damages := []struct {
		name   string
		damage func(t *testing.T)
		want   string
	}{
		{"a bit flipped in a run record", func(t *testing.T) {
			rewrite(t, path, "runs", runs[0], func(v []byte) []byte { v[5] ^= 0x04; return v })
		}, "damaged projection: run " + runs[0] + ": record damaged (checksum mismatch)"},
		{"a record that does not decode", func(t *testing.T) {
			rewrite(t, path, "runs", runs[1], func([]byte) []byte { return sealed([]byte(runs[1]), []byte(`{"status":`)) })
		}, "damaged projection: run " + runs[1] + ": record damaged (does not decode)"},
		{"the header", func(t *testing.T) {
			fh, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			if _, err := fh.WriteAt(bytes.Repeat([]byte{0xa5}, 2*os.Getpagesize()), 0); err != nil {
				t.Fatal(err)
			}
		}, "damaged projection: projection file structure: the file does not open: invalid database"},
	}
	for _, d := range damages {
		d.damage(t)
		var out bytes.Buffer
		err := audit.Run(context.Background(), audit.Options{DataDir: h.Dir}, &out)
		if err == nil || !strings.Contains(out.String(), d.want) || strings.Contains(out.String(), "invalid character") ||
			strings.Contains(out.String(), "unexpected end of JSON") {
			t.Fatalf("%s: audit %v, want a failure with the finding %q and no parse error:\n%s", d.name, err, d.want, out.String())
		}
		t.Logf("%s:\n%s", d.name, out.String())
		if !strings.Contains(out.String(), "invariant violations 0") {
			t.Fatalf("%s: the log's own audit should still pass:\n%s", d.name, out.String())
		}
		h.Restart() // moves the damaged file aside and rebuilds it from the log
		h.Stop()
		out.Reset()
		if err := audit.Run(context.Background(), audit.Options{DataDir: h.Dir}, &out); err != nil {
			t.Fatalf("%s: audit after the rebuild: %v\n%s", d.name, err, out.String())
		}
	}
	if aside, _ := filepath.Glob(path + ".damaged-*"); len(aside) != len(damages) {
		t.Fatalf("files moved aside: %v, want one per damage", aside)
	}
}

// rewrite replaces one record of the projection file with what change
// makes of it (the stored bytes, checksum included).
func rewrite(t *testing.T, path, bucket, key string, change func([]byte) []byte) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		v := b.Get([]byte(key))
		if v == nil {
			t.Fatalf("no %s/%s in the file", bucket, key)
		}
		return b.Put([]byte(key), change(bytes.Clone(v)))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A statement line rewritten in the read models, with a checksum that
// holds (a grant of 50 made 900), is found: the audit folds every
// account's statement from the log and compares it line by line.
func TestTheAuditFindsADoctoredStatementLine(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits))
	a, _ := Activity(t, h)
	h.Stop()
	db, err := bolt.Open(filepath.Join(h.Dir, "projections.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("account_ledger"))
		c := b.Cursor()
		prefix := []byte(a.ID + "/")
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			line := string(v[:len(v)-4])
			if strings.Contains(line, `"type":"grant","amount":50,`) {
				return b.Put(bytes.Clone(k), sealed(k, []byte(strings.Replace(line, `"amount":50,`, `"amount":900,`, 1))))
			}
		}
		t.Fatalf("no grant of 50 in %s's statement", a.ID)
		return nil
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = audit.Run(context.Background(), audit.Options{DataDir: h.Dir}, &out)
	if want := "account " + a.ID + ": statement line 2 says grant 900"; err == nil || !strings.Contains(out.String(), want) {
		t.Fatalf("a doctored statement line (want %q): %v\n%s", want, err, out.String())
	}
}
