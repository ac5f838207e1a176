package projections

import (
	"encoding/binary"
	"encoding/json"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	bolt "go.etcd.io/bbolt"
)

// apply folds one event into the read models inside tx. It is a pure
// function of the stored state and the event.
func apply(tx *bolt.Tx, subject string, data []byte, seq uint64) error {
	kind, id := engine.ParseSubject(subject)
	switch kind {
	case engine.KindAccount:
		var ev ledger.Event
		if err := json.Unmarshal(data, &ev); err != nil {
			return err
		}
		b := tx.Bucket(bucketAccounts)
		var prev ledger.Account
		if err := getJSON(b, []byte(id), &prev); err != nil && ev.Type != ledger.AccountOpened {
			return err
		}
		if entry, ok := ledger.LineOf(ev); ok {
			if err := putJSON(tx.Bucket(bucketLedger), accountSeqKey(id, seq), entry); err != nil {
				return err
			}
		}
		return putJSON(b, []byte(id), ledger.Snapshot(ev, prev))
	case engine.KindRun:
		var ev engine.RunEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return err
		}
		b := tx.Bucket(bucketRuns)
		var r engine.Run
		if err := getJSON(b, []byte(id), &r); err != nil && ev.Type != engine.RunCreated {
			return err
		}
		before := r.Status
		r = engine.ApplyRun(r, ev, seq)
		if err := countStatus(tx, before, r.Status); err != nil {
			return err
		}
		if ev.Type == engine.RunCreated {
			if err := tx.Bucket(bucketAcctRuns).Put(accountSeqKey(r.AccountID, seq), []byte(r.RunNo)); err != nil {
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
		return putJSON(b, []byte(id), r)
	case engine.KindExpired:
		return expireRun(tx, id)
	case engine.KindKey:
		var ev engine.KeyEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return err
		}
		k := engine.Key{KeyID: ev.KeyID, AccountID: ev.AccountID, Prefix: ev.Prefix, Revoked: ev.Type == engine.KeyRevoked}
		if err := tx.Bucket(bucketKeyIDs).Put([]byte(ev.KeyID), []byte(ev.Hash)); err != nil {
			return err
		}
		return putJSON(tx.Bucket(bucketKeys), []byte(ev.Hash), k)
	case engine.KindBrand:
		var ev engine.BrandContextEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return err
		}
		return putJSON(tx.Bucket(bucketBrands), []byte(id), ev.BrandContext)
	case engine.KindPrice:
		var ev engine.PriceEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return err
		}
		p := engine.Price{Slug: ev.Slug, CreditCost: ev.CreditCost, Recalibrating: ev.Recalibrating}
		return putJSON(tx.Bucket(bucketPrices), []byte(id), p)
	}
	return nil // jobs and slots have no read model
}

// accountSeqKey orders an account's entries (runs, statement) by sequence.
func accountSeqKey(accountID string, seq uint64) []byte {
	return append([]byte(accountID+"/"), u64(seq)...)
}

// expireRun removes every trace of a run from the read models (its ledger
// lines stay). A rebuild never sees the run's purged events, so live and
// rebuilt state agree.
func expireRun(tx *bolt.Tx, runNo string) error {
	runs := tx.Bucket(bucketRuns)
	var r engine.Run
	if err := getJSON(runs, []byte(runNo), &r); err != nil {
		return nil // never seen (a rebuild after the purge) or already gone
	}
	if err := countStatus(tx, r.Status, ""); err != nil {
		return err
	}
	if err := tx.Bucket(bucketAcctRuns).Delete(accountSeqKey(r.AccountID, r.CreatedSeq)); err != nil {
		return err
	}
	if r.FinishedAt != nil {
		if err := tx.Bucket(bucketFinished).Delete(finishedKey(*r.FinishedAt, runNo)); err != nil {
			return err
		}
	}
	return runs.Delete([]byte(runNo))
}

// finishedKey orders finished runs by when they ended.
func finishedKey(at time.Time, runNo string) []byte {
	return append(u64(uint64(at.UnixNano())), runNo...)
}

// countStatus moves one run from status `from` to status `to` in the
// per-status counts ("" is no status: a new or a removed run).
func countStatus(tx *bolt.Tx, from, to engine.Status) error {
	if from == to {
		return nil
	}
	b := tx.Bucket(bucketStatusCounts)
	for _, c := range []struct {
		st    engine.Status
		delta int64
	}{{from, -1}, {to, 1}} {
		if c.st == "" {
			continue
		}
		var n int64
		if v := b.Get([]byte(c.st)); len(v) == 8 {
			n = int64(binary.BigEndian.Uint64(v))
		}
		// A count that drops to zero is removed, as a rebuild that never
		// saw the (expired) runs would have it.
		var err error
		if n += c.delta; n == 0 {
			err = b.Delete([]byte(c.st))
		} else {
			err = b.Put([]byte(c.st), u64(uint64(n)))
		}
		if err != nil {
			return err
		}
	}
	return nil
}
