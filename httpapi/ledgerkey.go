package httpapi

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
)

// routeLedgerKey registers GET /api/v1/ledger/public-key: the key that
// verifies the ledger's signatures, for anyone (it is public, and a
// reviewer keeps it to check the log with later).
func (a *API) routeLedgerKey() {
	a.router.HandleFunc("/api/v1/ledger/public-key", a.ledgerKey).Methods(http.MethodGet)
}

// ledgerKeyAnswer is the answer: the key raw (base64) and as a PEM file, and
// its id, the first 16 hex digits of its SHA-256.
type ledgerKeyAnswer struct {
	Algorithm string `json:"algorithm"`
	PublicKey string `json:"public_key"`
	PEM       string `json:"pem"`
	KeyID     string `json:"key_id"`
}

// ledgerKeyOf is pub as the route answers it.
func ledgerKeyOf(pub ed25519.PublicKey) ledgerKeyAnswer {
	sum := sha256.Sum256(pub)
	return ledgerKeyAnswer{Algorithm: "Ed25519", PublicKey: base64.StdEncoding.EncodeToString(pub),
		PEM: string(ledger.PublicKeyPEM(pub)), KeyID: hex.EncodeToString(sum[:8])}
}

func (a *API) ledgerKey(w http.ResponseWriter, r *http.Request) {
	if a.cfg.LedgerKey == nil {
		a.fail(w, r, errorf(engine.CodeNotFound, "this node does not sign its ledger"))
		return
	}
	writeJSON(w, http.StatusOK, ledgerKeyOf(a.cfg.LedgerKey))
}
