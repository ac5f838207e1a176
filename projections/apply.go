package projections

import (
	"encoding/json"

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
		r = engine.ApplyRun(r, ev, seq)
		if ev.Type == engine.RunCreated {
			if err := tx.Bucket(bucketAcctRuns).Put(accountSeqKey(r.AccountID, seq), []byte(r.RunNo)); err != nil {
				return err
			}
		}
		return putJSON(b, []byte(id), r)
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
