package projections

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	bolt "go.etcd.io/bbolt"
)

// Damage is one damaged part of the projection file: a record that fails
// its checksum or does not decode, a missing bucket, or a page of the
// file that bbolt's own check refuses.
type Damage struct {
	Bucket  string // "" for the file's structure
	Key     string
	Problem string
}

// String names the entity the damage concerns, in the audit's words.
func (d Damage) String() string {
	return d.Entity() + ": " + d.Problem
}

// Entity names what the damaged record is about: an account, a run, an
// API key, a price…
func (d Damage) Entity() string {
	k := d.Key
	acctSeq := func() (string, uint64) { // account id + "/" + 8-byte sequence
		if len(k) < 9 {
			return k, 0
		}
		return strings.TrimSuffix(k[:len(k)-8], "/"), binary.BigEndian.Uint64([]byte(k[len(k)-8:]))
	}
	switch d.Bucket {
	case "":
		return "projection file structure"
	case string(bucketAccounts):
		return "account " + k
	case string(bucketRuns):
		return "run " + k
	case string(bucketKeys):
		return "API key with secret hash " + short(k)
	case string(bucketKeyIDs):
		return "API key " + k
	case string(bucketAcctKeys):
		acct, key, _ := strings.Cut(k, "/")
		return "account " + acct + ", API key " + key
	case string(bucketAcctRuns):
		acct, seq := acctSeq()
		return fmt.Sprintf("account %s, run history entry at sequence %d", acct, seq)
	case string(bucketLedger):
		acct, seq := acctSeq()
		return fmt.Sprintf("account %s, statement line at sequence %d", acct, seq)
	case string(bucketBrands):
		return "brand context " + k
	case string(bucketAcctBrands):
		acct, bc, _ := strings.Cut(k, "/")
		return "account " + acct + ", brand context " + bc
	case string(bucketPrices):
		return "price of App " + k
	case string(bucketFinished):
		if len(k) > 8 {
			return "run " + k[8:] + " (finished-runs index)"
		}
		return "finished-runs index"
	case string(bucketStatusCounts):
		return "count of runs in status " + k
	case string(bucketMeta):
		return "projection metadata " + k
	}
	return "bucket " + d.Bucket + ", key " + k
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12] + "…"
	}
	return s
}

// maxDamage bounds how much damage one check lists.
const maxDamage = 100

// Verify checks the whole file: bbolt's page check, then every record's
// checksum and decoding. It returns what is damaged, nothing when the file
// is sound.
func (s *Store) Verify() []Damage {
	var out []Damage
	_ = s.db.View(func(tx *bolt.Tx) error {
		out = verifyTx(tx)
		return nil
	})
	return out
}

func verifyTx(tx *bolt.Tx) (out []Damage) {
	add := func(d Damage) bool {
		out = append(out, d)
		return len(out) < maxDamage
	}
	defer func() {
		// bbolt trusts its pages: a damaged one can panic a read.
		if p := recover(); p != nil {
			add(Damage{Problem: fmt.Sprintf("reading the file failed: %v", p)})
		}
	}()
	for err := range tx.Check() {
		if !add(Damage{Problem: err.Error()}) {
			return out
		}
	}
	if len(out) > 0 {
		return out // records on broken pages cannot be walked safely
	}
	for _, name := range allBuckets {
		b := tx.Bucket(name)
		if b == nil {
			if !add(Damage{Bucket: string(name), Problem: "bucket missing"}) {
				return out
			}
			continue
		}
		check := checkers[string(name)]
		err := b.ForEach(func(k, v []byte) error {
			if v == nil {
				return errors.New("stop") // a nested bucket: never written here
			}
			val, err := unseal(k, v)
			if err == nil {
				err = check(k, val)
			}
			if err != nil && !add(Damage{Bucket: string(name), Key: string(k), Problem: problem(err)}) {
				return errors.New("stop")
			}
			return nil
		})
		if err != nil {
			if !add(Damage{Bucket: string(name), Problem: "holds a nested bucket"}) {
				return out
			}
		}
	}
	return out
}

// problem says in a few words what is wrong with a record: the entity
// names it, and a decoder's message is no finding.
func problem(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "checksum"):
		return "record damaged (checksum mismatch)"
	case strings.Contains(msg, "does not decode"):
		return "record damaged (does not decode)"
	case strings.Contains(msg, "too short"):
		return "record damaged (too short for its checksum)"
	}
	return "record damaged (" + msg + ")"
}

// checkers decode one bucket's values as the reads will.
var checkers = map[string]func(k, v []byte) error{
	string(bucketMeta): func(k, v []byte) error {
		if bytes.Equal(k, keyApplied) && len(v) != 8 {
			return errors.New("applied sequence is not 8 bytes")
		}
		return nil
	},
	string(bucketAccounts):     jsonOf[ledger.Account],
	string(bucketRuns):         jsonOf[engine.Run],
	string(bucketKeys):         jsonOf[engine.Key],
	string(bucketBrands):       jsonOf[engine.BrandContext],
	string(bucketPrices):       jsonOf[engine.Price],
	string(bucketLedger):       jsonOf[ledger.Line],
	string(bucketFinished):     jsonOf[engine.FinishedRun],
	string(bucketKeyIDs):       nonEmpty,
	string(bucketAcctKeys):     nonEmpty,
	string(bucketAcctRuns):     nonEmpty,
	string(bucketAcctBrands):   nonEmpty,
	string(bucketStatusCounts): eightBytes,
}

func jsonOf[T any](k, v []byte) error {
	var t T
	return decode(k, v, &t)
}

func nonEmpty(_, v []byte) error {
	if len(v) == 0 {
		return errors.New("empty reference")
	}
	return nil
}

func eightBytes(_, v []byte) error {
	if len(v) != 8 {
		return fmt.Errorf("%d bytes, want 8", len(v))
	}
	return nil
}
