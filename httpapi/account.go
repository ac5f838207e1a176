package httpapi

import (
	"net/http"
)

func (a *API) routeAccount() {
	a.router.HandleFunc("/api/v1/account", a.reader(a.getAccount)).Methods(http.MethodGet)
	a.router.HandleFunc("/api/v1/account/ledger", a.reader(a.getStatement)).Methods(http.MethodGet)
}

// getStatement handles GET /api/v1/account/ledger: the account's
// statement (statement.go).
func (a *API) getStatement(w http.ResponseWriter, r *http.Request, c caller) {
	a.writeStatement(w, r, c.AccountID)
}

// getAccount handles GET /api/v1/account.
func (a *API) getAccount(w http.ResponseWriter, r *http.Request, c caller) {
	acct, err := a.cfg.Reads.Account(c.AccountID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"account_id": acct.ID, "balance": acct.Balance, "active_runs": acct.Active})
}
