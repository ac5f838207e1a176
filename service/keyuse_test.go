package service_test

import (
	"context"
	"testing"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service"
)

// A key's use is recorded at most once per KeyUseEvery, whichever node
// asks: its subject does not grow by one event per key, node and minute.
func TestAKeysUseIsRecordedOncePerInterval(t *testing.T) {
	t.Parallel()
	rec := &recordingLog{}
	e := startEngineWith(t, false, engine.Limits{}, func(l port.Log) port.Log { rec.Log = l; return rec }, okApp())
	ctx := context.Background()
	acct, err := e.OpenAccount(ctx, "a@example.com", 10, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	before := rec.count("apprun.keyuse.")
	for range 3 { // three nodes, or one asking again
		if err := e.TouchKey(ctx, acct.KeyID); err != nil {
			t.Fatal(err)
		}
	}
	if n := rec.count("apprun.keyuse.") - before; n != 1 {
		t.Fatalf("%d key-use events for 3 touches within %s, want 1", n, service.KeyUseEvery)
	}
}
