package projections

import (
	"bytes"
	"context"
	"encoding/binary"
	"sort"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	bolt "go.etcd.io/bbolt"
)

func (s *Store) get(bucket []byte, key string, v any) error {
	return s.db.View(func(tx *bolt.Tx) error { return getJSON(tx.Bucket(bucket), []byte(key), v) })
}

// cached reads a record through c: decoded from bbolt on a miss.
func cached[V any](s *Store, c *recordCache[V], bucket []byte, id string) (V, error) {
	if v, ok := c.get(id); ok {
		return v, nil
	}
	var v V
	var readAt uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		if readAt, err = getU64(tx.Bucket(bucketMeta), keyApplied); err != nil {
			return err
		}
		return getJSON(tx.Bucket(bucket), []byte(id), &v)
	})
	if err == nil {
		c.fill(id, v, readAt)
	}
	return v, err
}

// KeyByHash finds an API key by the hash of its secret.
func (s *Store) KeyByHash(hash string) (engine.Key, error) {
	return cached(s, s.keys, bucketKeys, hash)
}

// KeyByID finds an API key by its id (key_…).
func (s *Store) KeyByID(id string) (engine.Key, error) {
	var hash []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		h, err := get(tx.Bucket(bucketKeyIDs), []byte(id))
		hash = bytes.Clone(h)
		return err
	})
	if err != nil {
		return engine.Key{}, err
	}
	return s.KeyByHash(string(hash))
}

// KeysOf lists an account's API keys, revoked ones too, newest first.
func (s *Store) KeysOf(accountID string) ([]engine.Key, error) {
	var out []engine.Key
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketAcctKeys).Cursor()
		prefix := []byte(accountID + "/")
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			hash, err := unseal(k, v)
			if err != nil {
				return err
			}
			var key engine.Key
			if err := getJSON(tx.Bucket(bucketKeys), hash, &key); err != nil {
				return err
			}
			out = append(out, key)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, err
}

// Account returns an account's state as last applied.
func (s *Store) Account(id string) (ledger.Account, error) {
	var a ledger.Account
	return a, s.get(bucketAccounts, id, &a)
}

// Run returns a run. Its Output is shared with the cache: read only.
func (s *Store) Run(runNo string) (engine.Run, error) {
	return cached(s, s.runs, bucketRuns, runNo)
}

// BrandContext implements engine.BrandContexts.
func (s *Store) BrandContext(_ context.Context, id string) (engine.BrandContext, error) {
	var bc engine.BrandContext
	return bc, s.get(bucketBrands, id, &bc)
}

// BrandContextsOf lists an account's brand contexts (deleted ones are
// gone), newest first.
func (s *Store) BrandContextsOf(accountID string) ([]engine.BrandContext, error) {
	var out []engine.BrandContext
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketAcctBrands).Cursor()
		prefix := []byte(accountID + "/")
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			id, err := unseal(k, v)
			if err != nil {
				return err
			}
			var bc engine.BrandContext
			if err := getJSON(tx.Bucket(bucketBrands), id, &bc); err != nil {
				return err
			}
			out = append(out, bc)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, err
}

// FinishedBefore implements engine.Reads: runs that ended before t,
// oldest first.
func (s *Store) FinishedBefore(t time.Time, limit int) ([]engine.FinishedRun, error) {
	var out []engine.FinishedRun
	end := u64(uint64(t.UnixNano()))
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketFinished).Cursor()
		for k, v := c.First(); k != nil && bytes.Compare(k[:8], end) < 0 && len(out) < limit; k, v = c.Next() {
			var f engine.FinishedRun
			if err := unsealJSON(k, v, &f); err != nil {
				return err
			}
			out = append(out, f)
		}
		return nil
	})
	return out, err
}

// Price returns an App's price as last applied; not found when never set.
func (s *Store) Price(slug string) (engine.Price, error) {
	var p engine.Price
	return p, s.get(bucketPrices, slug, &p)
}

// RunsOf lists an account's runs newest first, starting before the run
// created at sequence `before` (0: from the newest). It returns the cursor
// of the next page, 0 when there is none.
func (s *Store) RunsOf(accountID string, before uint64, limit int) ([]engine.Run, uint64, error) {
	var out []engine.Run
	next, err := s.newestFirst(bucketAcctRuns, accountID, before, limit, func(tx *bolt.Tx, k, v []byte) error {
		runNo, err := unseal(k, v)
		if err != nil {
			return err
		}
		var r engine.Run
		if err := getJSON(tx.Bucket(bucketRuns), runNo, &r); err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	return out, next, err
}

// Statement lists an account's grants, charges and refunds newest first,
// paged like RunsOf.
func (s *Store) Statement(accountID string, before uint64, limit int) ([]ledger.Line, uint64, error) {
	var out []ledger.Line
	next, err := s.newestFirst(bucketLedger, accountID, before, limit, func(_ *bolt.Tx, k, v []byte) error {
		var e ledger.Line
		if err := unsealJSON(k, v, &e); err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	return out, next, err
}

// Lines lists an account's statement lines, oldest first: what a
// statement over a period is made of (ledger.StatementOf). At most limit:
// more says there were more.
func (s *Store) Lines(accountID string, limit int) (lines []ledger.Line, more bool, err error) {
	prefix := []byte(accountID + "/")
	err = s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketLedger).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(lines) == limit {
				more = true
				return nil
			}
			var l ledger.Line
			if err := unsealJSON(k, v, &l); err != nil {
				return err
			}
			lines = append(lines, l)
		}
		return nil
	})
	return lines, more, err
}

// Accounts lists up to limit accounts by id, from the first id after
// `after` ("": the first), and the id to pass as after for the next page
// ("" when there is none).
func (s *Store) Accounts(after string, limit int) ([]ledger.Account, string, error) {
	var out []ledger.Account
	next := ""
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketAccounts).Cursor()
		k, v := c.Seek([]byte(after))
		if k != nil && string(k) == after {
			k, v = c.Next()
		}
		for ; k != nil; k, v = c.Next() {
			if len(out) == limit {
				next = out[len(out)-1].ID
				return nil
			}
			var a ledger.Account
			if err := unsealJSON(k, v, &a); err != nil {
				return err
			}
			out = append(out, a)
		}
		return nil
	})
	return out, next, err
}

// newestFirst walks the keys accountID/<seq> of an index bucket from the
// newest down, starting below `before` (0: the newest), calling visit with
// each value, and returns the sequence to pass as `before` for the next
// page (0 when there is none).
func (s *Store) newestFirst(bucket []byte, accountID string, before uint64, limit int, visit func(tx *bolt.Tx, k, v []byte) error) (uint64, error) {
	prefix := []byte(accountID + "/")
	var next uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucket).Cursor()
		var k, v []byte
		if before == 0 {
			k, v = c.Seek(append(bytes.Clone(prefix), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff))
		} else {
			k, v = c.Seek(accountSeqKey(accountID, before))
		}
		if k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
		n, lastSeq := 0, uint64(0)
		for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Prev() {
			if n == limit {
				next = lastSeq // there is more: the next page starts below the last one shown
				return nil
			}
			if err := visit(tx, k, v); err != nil {
				return err
			}
			n, lastSeq = n+1, binary.BigEndian.Uint64(k[len(k)-8:])
		}
		return nil
	})
	return next, err
}

// Dump returns every read model (all buckets but the applied sequence) as
// bucket → key → stored value (checksums taken off): what a rebuild from
// the log must reproduce.
func (s *Store) Dump() (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	err := s.db.View(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if bytes.Equal(name, bucketMeta) {
				continue
			}
			m := map[string]string{}
			err := tx.Bucket(name).ForEach(func(k, v []byte) error {
				val, err := unseal(k, v)
				m[string(k)] = string(val)
				return err
			})
			if err != nil {
				return err
			}
			out[string(name)] = m
		}
		return nil
	})
	return out, err
}

// RunsByStatus counts the runs in each status.
func (s *Store) RunsByStatus() (map[engine.Status]int64, error) {
	out := map[engine.Status]int64{}
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketStatusCounts)
		return b.ForEach(func(k, _ []byte) error {
			n, err := getU64(b, k)
			out[engine.Status(k)] = int64(n)
			return err
		})
	})
	return out, err
}
