package projections_test

import (
	"bytes"
	"context"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apprun/apprun/internal/logbuf"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/projections"
	"github.com/apprun/apprun/service"
	bolt "go.etcd.io/bbolt"
)

// damagedFixture is a store holding an account and three finished runs,
// closed, with its Dump and the log's last sequence.
func damagedFixture(t *testing.T) (f *fixture, want map[string]map[string]string, last uint64) {
	t.Helper()
	f = setup(t)
	ctx := context.Background()
	acct, err := f.eng.OpenAccount(ctx, "a@example.com", 100, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	for i := 0; i < 3; i++ {
		r, err := f.eng.CreateRun(ctx, service.CreateRunRequest{AccountID: acct.AccountID, KeyID: acct.KeyID, AppSlug: "a", Input: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		runs, last = append(runs, r.RunNo), r.Seq
	}
	s := f.open(t)
	waitFor(t, s, last)
	for _, no := range runs { // until each has finished: the log then stays still
		for {
			r, err := s.Run(no)
			if err != nil {
				t.Fatal(err)
			}
			if r.Terminal() {
				break
			}
			waitFor(t, s, s.Applied()+1)
		}
	}
	last = s.Applied()
	want, err = s.Dump()
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	return f, want, last
}

// overwriteAll replaces every copy of pattern in the file (live and freed
// pages alike, so the live one is surely hit) with what with returns.
func overwriteAll(t *testing.T, path string, pattern []byte, with func(at int) []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := bytes.Index(data, pattern); i >= 0; {
		repl := with(i)
		copy(data[i:], repl)
		n++
		next := bytes.Index(data[i+len(repl):], pattern)
		if next < 0 {
			break
		}
		i += len(repl) + next
	}
	if n == 0 {
		t.Fatalf("%q not found in the file", pattern)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.UintN(256))
	}
	return b
}

// A damaged projections.db is found at start, moved aside and rebuilt from
// the log, with a warning; the rebuilt file equals the one before the
// damage. The damage: the header (both meta pages), random bytes in the
// data of records, whole data pages overwritten, and a record whose
// checksum holds but whose content does not decode.
func TestADamagedFileIsMovedAsideAndRebuiltFromTheLog(t *testing.T) {
	t.Parallel()
	pageSize := os.Getpagesize()
	damages := map[string]func(t *testing.T, path string, rng *rand.Rand){
		"header": func(t *testing.T, path string, rng *rand.Rand) {
			fh, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			if _, err := fh.WriteAt(randomBytes(rng, 2*pageSize), 0); err != nil {
				t.Fatal(err)
			}
		},
		"data page bytes": func(t *testing.T, path string, rng *rand.Rand) {
			overwriteAll(t, path, []byte(`"status":"`), func(int) []byte { return randomBytes(rng, 12) })
		},
		"whole data page": func(t *testing.T, path string, rng *rand.Rand) {
			overwriteAll(t, path, []byte(`"app_slug":"a"`), func(at int) []byte {
				return randomBytes(rng, pageSize-at%pageSize) // from there to the page's end
			})
		},
		"undecodable record": func(t *testing.T, path string, _ *rand.Rand) {
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			err = db.Update(func(tx *bolt.Tx) error {
				b := tx.Bucket([]byte("runs"))
				k, _ := b.Cursor().First()
				return b.Put(k, projections.Seal(k, []byte(`{"run_no":`)))
			})
			if err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, damage := range damages {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f, want, last := damagedFixture(t)
			damage(t, f.path, rand.New(rand.NewPCG(1, uint64(len(name)))))

			var logs logbuf.Buffer
			s, err := projections.Open(f.path, slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatalf("open of a damaged file: %v, want it moved aside and rebuilt", err)
			}
			defer s.Close()
			if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "damaged file moved aside") {
				t.Fatalf("no warning logged:\n%s", logs.String())
			}
			aside, _ := filepath.Glob(f.path + ".damaged-*")
			if len(aside) != 1 {
				t.Fatalf("moved aside: %v, want the damaged file kept once", aside)
			}
			if s.Applied() != 0 {
				t.Fatalf("a damaged file resumed at %d instead of being rebuilt", s.Applied())
			}
			checkRebuilt(t, f, s, last, want)
		})
	}
}

// checkRebuilt starts s, a file rebuilt from nothing, on the fixture's log
// and checks that once it has applied last it holds want, soundly.
func checkRebuilt(t *testing.T, f *fixture, s *projections.Store, last uint64, want map[string]map[string]string) {
	t.Helper()
	if err := s.Start(context.Background(), f.js, "APPRUN"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, s, last)
	got, err := s.Dump()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rebuilt file differs from the one before:\n got %v\nwant %v", got, want)
	}
	if d := s.Verify(); len(d) != 0 {
		t.Fatalf("rebuilt file not sound: %v", d)
	}
}

// A sound file is not moved aside, and Verify finds nothing in it.
func TestASoundFileIsKept(t *testing.T) {
	t.Parallel()
	f, _, last := damagedFixture(t)
	var logs logbuf.Buffer
	s, err := projections.Open(f.path, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Applied() < last || strings.Contains(logs.String(), "damaged") {
		t.Fatalf("a sound file was not resumed (applied %d of %d):\n%s", s.Applied(), last, logs.String())
	}
	if aside, _ := filepath.Glob(f.path + ".damaged-*"); len(aside) != 0 {
		t.Fatalf("a sound file was moved aside: %v", aside)
	}
}

// OpenExclusive, the audit's open, names each damaged record's entity and
// changes nothing.
func TestVerifyNamesTheDamagedEntity(t *testing.T) {
	t.Parallel()
	f, _, _ := damagedFixture(t)
	var runNo []byte
	db, err := bolt.Open(f.path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("runs"))
		k, v := b.Cursor().First()
		runNo = bytes.Clone(k)
		v = bytes.Clone(v)
		v[3] ^= 0x20 // one bit
		return b.Put(k, v)
	})
	db.Close()
	s, damage, err := projections.OpenExclusive(f.path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if len(damage) != 1 || damage[0].String() != "run "+string(runNo)+": record damaged (checksum mismatch)" {
		t.Fatalf("damage %v, want run %s named with a checksum mismatch", damage, runNo)
	}
	if aside, _ := filepath.Glob(f.path + ".damaged-*"); len(aside) != 0 {
		t.Fatalf("the audit's open moved the file: %v", aside)
	}
}
