package httpapi_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/apprun/apprun/ledger"
	. "github.com/apprun/apprun/node/nodetest"
)

// An account's checkpoint is its newest event's sequence, hash and
// balance, signed by the ledger's key. The log's checkpoint is written
// only when account events came since the newest (asking again answers
// the same bytes), names the one before it, and lists only the accounts
// that moved.
func TestCheckpointsAreSignedAndChained(t *testing.T) {
	t.Parallel()
	h := Start(t)
	pub := DevLedgerKey(t, h.Dir)
	a, b := h.Account(100), h.Account(30)
	checkpoint := func(path, key string) (ledger.Checkpoint, []byte) {
		t.Helper()
		method := "POST"
		if key != AdminToken {
			method = "GET"
		}
		r := h.Do(method, path, key, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, path, r.Status, r.Body)
		}
		cp, err := ledger.DecodeCheckpoint(r.Body)
		if err == nil {
			err = ledger.VerifyCheckpoint(pub, cp)
		}
		if err != nil {
			t.Fatalf("%s: %v: %s", path, err, r.Body)
		}
		return cp, bytes.TrimSpace(r.Body)
	}
	own, _ := checkpoint("/api/v1/account/ledger/checkpoint", a.Key)
	if own.Kind != ledger.CheckpointAccount || len(own.Heads) != 1 || own.Heads[0].Account != a.ID || own.Heads[0].Balance != 100 || own.Through != own.Heads[0].Seq {
		t.Fatalf("the account's checkpoint: %+v", own)
	}
	first, firstData := checkpoint("/admin/v1/ledger/checkpoint", AdminToken)
	if first.Kind != ledger.CheckpointLog || first.Prev != "" || first.Accounts != 2 || first.Outstanding != 130 || len(first.Heads) != 2 {
		t.Fatalf("the first log checkpoint: %+v", first)
	}
	if _, again := checkpoint("/admin/v1/ledger/checkpoint", AdminToken); !bytes.Equal(again, firstData) {
		t.Fatalf("nothing moved, yet a new checkpoint:\n%s\n%s", firstData, again)
	}
	h.Do("POST", "/admin/v1/accounts/"+b.ID+"/credits", AdminToken, map[string]any{"reason": "test", "amount": 5})
	second, _ := checkpoint("/admin/v1/ledger/checkpoint", AdminToken)
	if second.Prev != ledger.Hash(firstData) || second.Accounts != 2 || second.Outstanding != 135 ||
		len(second.Heads) != 1 || second.Heads[0].Account != b.ID || second.Heads[0].Balance != 35 {
		t.Fatalf("the second log checkpoint: %+v", second)
	}
	if r := h.Do("GET", "/api/v1/account/ledger/checkpoint", "", nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("without a key: %d", r.Status)
	}
	if r := h.Do("POST", "/admin/v1/ledger/checkpoint", a.Key, nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("with a customer's key: %d", r.Status)
	}
}
