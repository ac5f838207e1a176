package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/apprun/apprun/ledger"
	. "github.com/apprun/apprun/node/nodetest"
)

// Anyone may fetch the key that verifies the ledger: it is the public key
// of the key the node signs with (here the one it made in its data
// directory), as base64 and as a PEM file.
func TestTheLedgersPublicKeyIsServedToAnyone(t *testing.T) {
	t.Parallel()
	h := Start(t)
	r := h.Do("GET", "/api/v1/ledger/public-key", "", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	m := r.JSON(t)
	pub, err := ledger.ParsePublicKeyPEM([]byte(m["pem"].(string)))
	if err != nil || !pub.Equal(DevLedgerKey(t, h.Dir)) {
		t.Fatalf("served %v (%v), not the signing key's public key", m, err)
	}
	if m["algorithm"] != "Ed25519" || len(m["key_id"].(string)) != 16 {
		t.Fatalf("answer %v", m)
	}
}
