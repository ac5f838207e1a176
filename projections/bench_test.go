package projections_test

import (
	"context"
	"testing"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
)

// BenchmarkAuthenticateKey measures what authenticating a request costs
// besides reading its header: hashing the presented key and finding it in
// the read model (first from bbolt, then from the cache).
//
//	go test ./projections -run '^$' -bench AuthenticateKey
func BenchmarkAuthenticateKey(b *testing.B) {
	f := setup(b)
	acct, err := f.eng.OpenAccount(context.Background(), "a@example.com", 10, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		b.Fatal(err)
	}
	s := f.open(b)
	defer s.Close()
	waitFor(b, s, acct.Seq)
	b.ReportAllocs()
	for b.Loop() {
		k, err := s.KeyByHash(engine.HashKey(acct.APIKey))
		if err != nil || k.AccountID != acct.AccountID {
			b.Fatalf("%v %v", k, err)
		}
	}
}
