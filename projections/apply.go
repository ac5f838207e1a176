package projections

import (
	"encoding/json"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/subjects"
	bolt "go.etcd.io/bbolt"
)

// batch is one transaction's working set: the accounts and runs it has
// touched stay decoded until the end of the batch and are encoded once,
// however many of their events the batch holds (a rebuild meets a run's
// events one after another), and the per-status counts move in memory.
type batch struct {
	tx     *bolt.Tx
	accts  map[string]*ledger.Account
	runs   map[string]*engine.Run // nil value: removed
	counts map[engine.Status]int64
	// keysChanged: the batch created or revoked an API key.
	keysChanged bool
}

// touchedRuns are the runs the batch read, changed or removed.
func (b *batch) touchedRuns() []string {
	ids := make([]string, 0, len(b.runs))
	for id := range b.runs {
		ids = append(ids, id)
	}
	return ids
}

func newBatch(tx *bolt.Tx) *batch {
	return &batch{tx: tx, accts: map[string]*ledger.Account{}, runs: map[string]*engine.Run{}, counts: map[engine.Status]int64{}}
}

func (b *batch) account(id string) (*ledger.Account, error) {
	if a, ok := b.accts[id]; ok {
		return a, nil
	}
	a := &ledger.Account{}
	if err := getJSON(b.tx.Bucket(bucketAccounts), []byte(id), a); err != nil && err != port.ErrNotFound {
		return nil, err
	}
	b.accts[id] = a
	return a, nil
}

// run is the run's state, nil when there is none.
func (b *batch) run(id string) (*engine.Run, error) {
	if r, ok := b.runs[id]; ok {
		return r, nil
	}
	r := &engine.Run{}
	err := getJSON(b.tx.Bucket(bucketRuns), []byte(id), r)
	if err == port.ErrNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	b.runs[id] = r
	return r, nil
}

// flush writes what the batch changed.
func (b *batch) flush() error {
	for id, a := range b.accts {
		if a.ID == "" {
			continue // never opened (not in the log any more)
		}
		if err := putJSON(b.tx.Bucket(bucketAccounts), []byte(id), a); err != nil {
			return err
		}
	}
	runs := b.tx.Bucket(bucketRuns)
	for id, r := range b.runs {
		var err error
		if r == nil {
			err = runs.Delete([]byte(id))
		} else {
			err = putJSON(runs, []byte(id), r)
		}
		if err != nil {
			return err
		}
	}
	return b.flushCounts()
}

// apply folds one event into the read models. It is a pure function of
// the stored state and the event.
// It decodes m unless decodeMsg already did.
func (b *batch) apply(m event) error {
	tx, kind, id, data, seq := b.tx, m.kind, m.id, m.data, m.seq
	switch kind {
	case subjects.KindAccount:
		var ev ledger.Event
		if m.acct != nil {
			ev = *m.acct
		} else if err := json.Unmarshal(data, &ev); err != nil {
			return err
		}
		a, err := b.account(id)
		if err != nil {
			return err
		}
		if a.ID == "" && ev.Type != ledger.AccountOpened {
			return port.ErrNotFound
		}
		if entry, ok := ledger.LineOf(ev, seq, data); ok {
			if err := putJSON(tx.Bucket(bucketLedger), accountSeqKey(id, seq), entry); err != nil {
				return err
			}
		}
		*a = ledger.Snapshot(ev, *a)
		return nil
	case subjects.KindRun:
		var ev engine.RunEvent
		if m.run != nil {
			ev = *m.run
		} else {
			var err error
			if ev, err = engine.DecodeRunEvent(data); err != nil {
				return err
			}
		}
		if ev.Type == engine.RunFenced {
			return nil // an admission that was never stored: no run
		}
		r, err := b.run(id)
		if err != nil {
			return err
		}
		if r == nil {
			if ev.Type != engine.RunCreated {
				return port.ErrNotFound
			}
			r = &engine.Run{}
			b.runs[id] = r
		}
		before := r.Status
		*r = engine.ApplyRun(*r, ev, seq)
		b.countStatus(before, r.Status)
		if ev.Type == engine.RunCreated {
			if err := put(tx.Bucket(bucketAcctRuns), accountSeqKey(r.AccountID, seq), []byte(r.RunNo)); err != nil {
				return err
			}
		}
		if r.Terminal() && r.FinishedAt != nil {
			f := engine.FinishedRun{RunNo: r.RunNo, AccountID: r.AccountID, AppSlug: r.AppSlug, Status: r.Status,
				CreditCost: r.CreditCost, FinishedAt: *r.FinishedAt}
			if err := putJSON(tx.Bucket(bucketFinished), finishedKey(f.FinishedAt, r.RunNo), f); err != nil {
				return err
			}
		}
		return nil
	case subjects.KindExpired:
		return b.expireRun(id)
	case subjects.KindKey, subjects.KindKeyUse:
		var ev engine.KeyEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return err
		}
		b.keysChanged = true
		var k engine.Key
		err := getJSON(tx.Bucket(bucketKeys), []byte(ev.Hash), &k)
		if err != nil && err != port.ErrNotFound {
			return err
		}
		if ev.Type == engine.KeyUsed || kind == subjects.KindKeyUse {
			// A use only dates a key its creation made: it never makes a
			// key, nor moves one to another account (the use records are
			// neither signed nor kept: an insider's forged use must not
			// open a way in).
			if err != nil || k.KeyID != ev.KeyID || k.AccountID != ev.AccountID || ev.Type != engine.KeyUsed {
				return nil
			}
			k.LastUsedAt = ev.At
			return putJSON(tx.Bucket(bucketKeys), []byte(ev.Hash), k)
		}
		k.KeyID, k.AccountID, k.Prefix, k.Name = ev.KeyID, ev.AccountID, ev.Prefix, ev.Name
		switch ev.Type {
		case engine.KeyCreated:
			k.CreatedAt = ev.At
		case engine.KeyUsed:
			k.LastUsedAt = ev.At
		case engine.KeyRevoked:
			k.Revoked, k.RevokedAt = true, ev.At
		}
		if err := put(tx.Bucket(bucketKeyIDs), []byte(ev.KeyID), []byte(ev.Hash)); err != nil {
			return err
		}
		if err := put(tx.Bucket(bucketAcctKeys), []byte(ev.AccountID+"/"+ev.KeyID), []byte(ev.Hash)); err != nil {
			return err
		}
		return putJSON(tx.Bucket(bucketKeys), []byte(ev.Hash), k)
	case subjects.KindBrand:
		var ev engine.BrandContextEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return err
		}
		return applyBrand(tx, id, ev)
	case subjects.KindPrice:
		var ev engine.PriceEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return err
		}
		p := engine.Price{Slug: ev.Slug, CreditCost: ev.CreditCost, Recalibrating: ev.Recalibrating, At: ev.At}
		return putJSON(tx.Bucket(bucketPrices), []byte(id), p)
	}
	return nil // jobs and slots have no read model
}

// applyBrand keeps a brand context and its place in its account's list,
// or removes both when it is deleted.
func applyBrand(tx *bolt.Tx, id string, ev engine.BrandContextEvent) error {
	var index []byte
	if ev.AccountID != "" {
		index = []byte(ev.AccountID + "/" + id)
	}
	if ev.Deleted() {
		if index != nil {
			if err := tx.Bucket(bucketAcctBrands).Delete(index); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketBrands).Delete([]byte(id))
	}
	if index != nil {
		if err := put(tx.Bucket(bucketAcctBrands), index, []byte(id)); err != nil {
			return err
		}
	}
	return putJSON(tx.Bucket(bucketBrands), []byte(id), ev.BrandContext)
}

// accountSeqKey orders an account's entries (runs, statement) by sequence.
func accountSeqKey(accountID string, seq uint64) []byte {
	return append([]byte(accountID+"/"), u64(seq)...)
}

// expireRun removes every trace of a run from the read models (its ledger
// lines stay). A rebuild never sees the run's purged events, so live and
// rebuilt state agree.
func (b *batch) expireRun(runNo string) error {
	r, err := b.run(runNo)
	if err != nil || r == nil {
		return err // never seen (a rebuild after the purge) or already gone
	}
	b.countStatus(r.Status, "")
	if err := b.tx.Bucket(bucketAcctRuns).Delete(accountSeqKey(r.AccountID, r.CreatedSeq)); err != nil {
		return err
	}
	if r.FinishedAt != nil {
		if err := b.tx.Bucket(bucketFinished).Delete(finishedKey(*r.FinishedAt, runNo)); err != nil {
			return err
		}
	}
	b.runs[runNo] = nil
	return nil
}

// finishedKey orders finished runs by when they ended.
func finishedKey(at time.Time, runNo string) []byte {
	return append(u64(uint64(at.UnixNano())), runNo...)
}

// countStatus moves one run from status `from` to status `to` in the
// per-status counts ("" is no status: a new or a removed run).
func (b *batch) countStatus(from, to engine.Status) {
	if from != to {
		b.counts[from]--
		b.counts[to]++
	}
}

func (b *batch) flushCounts() error {
	bucket := b.tx.Bucket(bucketStatusCounts)
	for st, delta := range b.counts {
		if st == "" || delta == 0 {
			continue
		}
		stored, err := getU64(bucket, []byte(st))
		if err != nil {
			return err
		}
		n := int64(stored)
		// A count that drops to zero is removed, as a rebuild that never
		// saw the (expired) runs would have it.
		if n += delta; n == 0 {
			err = bucket.Delete([]byte(st))
		} else {
			err = put(bucket, []byte(st), u64(uint64(n)))
		}
		if err != nil {
			return err
		}
	}
	return nil
}
