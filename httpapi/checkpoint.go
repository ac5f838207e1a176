package httpapi

import (
	"encoding/json"
	"net/http"
)

// routeCheckpoints registers an account's signed checkpoint
// (ledger/checkpoint.go), for its owner to keep; the log's, for the
// operator, is an admin route (admin.go). `apprun audit --checkpoint`
// takes either and proves the log still holds what it names.
func (a *API) routeCheckpoints() {
	a.router.HandleFunc("/api/v1/account/ledger/checkpoint", a.reader(a.accountCheckpoint)).Methods(http.MethodGet)
}

// accountCheckpoint handles GET /api/v1/account/ledger/checkpoint: the
// account's newest event's sequence, hash and balance, signed now.
func (a *API) accountCheckpoint(w http.ResponseWriter, r *http.Request, c caller) {
	cp, err := a.cfg.Engine.AccountCheckpoint(r.Context(), c.AccountID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, json.RawMessage(cp))
}

// logCheckpoint handles POST /admin/v1/ledger/checkpoint: writes the
// log's checkpoint when account events came since the newest, and answers
// the newest, byte for byte as the log stores it.
func (a *API) logCheckpoint(w http.ResponseWriter, r *http.Request) {
	cp, err := a.cfg.Engine.Checkpoint(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, json.RawMessage(cp))
}
