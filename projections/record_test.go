package projections

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	gojson "github.com/goccy/go-json"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
)

// The read models encode their records with goccy/go-json (putJSON).
// Whatever an event holds, the record it makes must be the bytes
// encoding/json would have written: a rebuilt file is the file the node
// wrote live, and a file from an older binary reads the same. Every record putJSON
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
			if line, ok := ledger.LineOf(ev, 1, data); ok {
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

// encodersAgree checks that both encoders write v alike, and that decode
// reads what they wrote as encoding/json does.
func encodersAgree(t *testing.T, data []byte, v any) {
	t.Helper()
	want, werr := json.Marshal(v)
	got, gerr := gojson.Marshal(v)
	if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
		t.Fatalf("from %q, %T: goccy %s (%v), encoding/json %s (%v)", data, v, got, gerr, want, werr)
	}
	if werr == nil {
		decodersAgree(t, want, reflect.TypeOf(v))
	}
}

// recordTypes are the types decode reads from the file.
var recordTypes = []reflect.Type{
	reflect.TypeFor[engine.Run](), reflect.TypeFor[engine.FinishedRun](), reflect.TypeFor[ledger.Account](),
	reflect.TypeFor[ledger.Line](), reflect.TypeFor[engine.Key](), reflect.TypeFor[engine.BrandContext](),
	reflect.TypeFor[engine.Price](),
}

// The read models decode their records with goccy/go-json (decode), and
// files written before, and the bytes encoding/json would write, must
// read the same. Whatever the bytes, decode reads what encoding/json
// reads, or refuses them as encoding/json does; and a record written is
// read back as written (FuzzRecordEncodersAgree's encodersAgree).
func FuzzRecordDecodersAgree(f *testing.F) {
	addEventSeeds(f)
	f.Add([]byte(`{"run_no":"run_a","status":"completed","created_at":"2026-11-23T12:00:00Z","output":{"a":[1,"\u2028"]}}`))
	f.Add([]byte(`{"id":"acct_a","balance":5,"BALANCE":7,"balance":9}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, typ := range recordTypes {
			decodersAgree(t, data, typ)
		}
	})
}

func decodersAgree(t *testing.T, data []byte, typ reflect.Type) {
	t.Helper()
	want, got := reflect.New(typ), reflect.New(typ)
	werr := json.Unmarshal(data, want.Interface())
	gerr := decode([]byte("k"), data, got.Interface())
	if (werr == nil) != (gerr == nil) || (werr == nil && !reflect.DeepEqual(got.Elem().Interface(), want.Elem().Interface())) {
		t.Fatalf("%s from %q: decode %+v (%v), encoding/json %+v (%v)", typ, data, got.Elem(), gerr, want.Elem(), werr)
	}
}
