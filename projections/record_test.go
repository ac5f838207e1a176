package projections

import (
	"bytes"
	"encoding/json"
	"testing"

	gojson "github.com/goccy/go-json"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
)

// The read models encode their records with goccy/go-json (putJSON), and
// read them, and every file written before, with encoding/json. Whatever
// an event holds, the record it makes must be the bytes encoding/json
// would have written: a rebuilt file is the file the node wrote live, and
// a file from an older binary reads the same. Every record putJSON
// stores is made here as apply makes it: a run, a finished run, an
// account, a ledger line, a key, a brand context, a price.
func FuzzRecordEncodersAgree(f *testing.F) {
	addEventSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if ev, err := engine.DecodeRunEvent(data); err == nil {
			created := ev
			created.Type = engine.RunCreated
			r := engine.ApplyRun(engine.ApplyRun(engine.Run{}, created, 1), ev, 2)
			encodersAgree(t, data, r)
			if r.FinishedAt != nil {
				encodersAgree(t, data, engine.FinishedRun{RunNo: r.RunNo, AccountID: r.AccountID, AppSlug: r.AppSlug,
					Status: r.Status, CreditCost: r.CreditCost, FinishedAt: *r.FinishedAt})
			}
		}
		var ev ledger.Event
		if json.Unmarshal(data, &ev) == nil {
			encodersAgree(t, data, ledger.Snapshot(ev, ledger.Account{}))
			if line, ok := ledger.LineOf(ev); ok {
				encodersAgree(t, data, line)
			}
		}
		var key engine.KeyEvent
		if json.Unmarshal(data, &key) == nil { // every field apply sets
			encodersAgree(t, data, engine.Key{KeyID: key.KeyID, AccountID: key.AccountID, Prefix: key.Prefix, Name: key.Name,
				Revoked: true, CreatedAt: key.At, LastUsedAt: key.At, RevokedAt: key.At})
		}
		var brand engine.BrandContextEvent
		if json.Unmarshal(data, &brand) == nil {
			encodersAgree(t, data, brand.BrandContext)
		}
		var price engine.PriceEvent
		if json.Unmarshal(data, &price) == nil {
			encodersAgree(t, data, engine.Price{Slug: price.Slug, CreditCost: price.CreditCost, Recalibrating: price.Recalibrating})
		}
	})
}

func encodersAgree(t *testing.T, data []byte, v any) {
	t.Helper()
	want, werr := json.Marshal(v)
	got, gerr := gojson.Marshal(v)
	if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
		t.Fatalf("from %q, %T: goccy %s (%v), encoding/json %s (%v)", data, v, got, gerr, want, werr)
	}
}
