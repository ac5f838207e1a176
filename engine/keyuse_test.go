package engine_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/apprun/apprun/engine"
)

// countingLog counts the entries appended on subjects with a prefix.
type countingLog struct {
	Log
	prefix string
	n      atomic.Int32
}

func (l *countingLog) Append(ctx context.Context, entries ...Entry) (uint64, error) {
	seq, err := l.Log.Append(ctx, entries...)
	if err == nil {
		for _, e := range entries {
			if strings.HasPrefix(e.Subject, l.prefix) {
				l.n.Add(1)
			}
		}
	}
	return seq, err
}

// A key's use is recorded at most once per KeyUseEvery, whichever node
// asks: its subject does not grow by one event per key, node and minute.
func TestAKeysUseIsRecordedOncePerInterval(t *testing.T) {
	t.Parallel()
	counting := &countingLog{prefix: "apprun.keyuse."}
	e := startEngineWith(t, false, Limits{}, func(l Log) Log { counting.Log = l; return counting }, okApp())
	ctx := context.Background()
	acct, err := e.OpenAccount(ctx, "a@example.com", 10)
	if err != nil {
		t.Fatal(err)
	}
	before := counting.n.Load()
	for range 3 { // three nodes, or one asking again
		if err := e.TouchKey(ctx, acct.KeyID); err != nil {
			t.Fatal(err)
		}
	}
	if n := counting.n.Load() - before; n != 1 {
		t.Fatalf("%d key-use events for 3 touches within %s, want 1", n, KeyUseEvery)
	}
}
