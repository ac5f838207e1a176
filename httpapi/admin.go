package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/apprun/apprun/engine"
	"github.com/gorilla/mux"
)

func (a *API) routeAdmin() {
	r := a.router.PathPrefix("/admin/v1").Subrouter()
	r.HandleFunc("/accounts", a.admin(a.openAccount)).Methods(http.MethodPost)
	r.HandleFunc("/accounts/{account_id}/credits", a.admin(a.grantCredits)).Methods(http.MethodPost)
	r.HandleFunc("/accounts/{account_id}/keys", a.admin(a.createKey)).Methods(http.MethodPost)
	r.HandleFunc("/keys/{key_id}", a.admin(a.revokeKey)).Methods(http.MethodDelete)
	r.HandleFunc("/apps/{slug}/price", a.admin(a.setPrice)).Methods(http.MethodPut)
	r.HandleFunc("/ledger/checkpoint", a.admin(a.logCheckpoint)).Methods(http.MethodPost)
}

// intField decodes a required integer member.
func intField(obj map[string]json.RawMessage, name string) (int64, error) {
	raw, ok := obj[name]
	var n int64
	if !ok || json.Unmarshal(raw, &n) != nil {
		return 0, errorf(engine.CodeInvalidRequest, "%s is required and must be an integer", name)
	}
	return n, nil
}

// openAccount handles POST /admin/v1/accounts {"email","credits"}.
func (a *API) openAccount(w http.ResponseWriter, r *http.Request) {
	obj, err := readJSONObject(w, r)
	if err == nil {
		err = onlyFields(obj, "email", "credits")
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	email, _, err := stringField(obj, "email")
	if err != nil {
		a.fail(w, r, err)
		return
	}
	var credits int64
	if _, ok := obj["credits"]; ok {
		if credits, err = intField(obj, "credits"); err != nil {
			a.fail(w, r, err)
			return
		}
	}
	acct, err := a.cfg.Engine.OpenAccount(r.Context(), email, credits)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.stored(r, acct.Seq, "account opened")
	writeJSON(w, http.StatusCreated, map[string]any{"account_id": acct.AccountID, "api_key": acct.APIKey, "key_id": acct.KeyID})
}

// grantCredits handles POST /admin/v1/accounts/{account_id}/credits {"amount"}.
func (a *API) grantCredits(w http.ResponseWriter, r *http.Request) {
	obj, err := readJSONObject(w, r)
	if err == nil {
		err = onlyFields(obj, "amount")
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	amount, err := intField(obj, "amount")
	if err != nil {
		a.fail(w, r, err)
		return
	}
	balance, seq, err := a.cfg.Engine.GrantCredits(r.Context(), mux.Vars(r)["account_id"], amount)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.stored(r, seq, "credits granted")
	writeJSON(w, http.StatusOK, map[string]any{"balance": balance})
}

// createKey handles POST /admin/v1/accounts/{account_id}/keys.
func (a *API) createKey(w http.ResponseWriter, r *http.Request) {
	k, err := a.cfg.Engine.CreateKey(r.Context(), mux.Vars(r)["account_id"], "")
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.stored(r, k.Seq, "key created")
	writeJSON(w, http.StatusCreated, map[string]any{"key_id": k.KeyID, "api_key": k.APIKey})
}

// revokeKey handles DELETE /admin/v1/keys/{key_id}: the key fails at once.
func (a *API) revokeKey(w http.ResponseWriter, r *http.Request) {
	seq, err := a.cfg.Engine.RevokeKey(r.Context(), mux.Vars(r)["key_id"])
	if err == nil {
		// Not stored(): the 204 promises the key fails at once, which
		// this node's key check (its read models) keeps only once they
		// show the revocation. A revocation is safe to repeat, so an
		// error here hides nothing.
		err = a.awaitRead(r.Context(), seq)
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// setPrice handles PUT /admin/v1/apps/{slug}/price {"credit_cost": n} or
// {"recalibrating": true}.
func (a *API) setPrice(w http.ResponseWriter, r *http.Request) {
	obj, err := readJSONObject(w, r)
	if err == nil {
		err = onlyFields(obj, "credit_cost", "recalibrating")
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	var recal bool
	if raw, ok := obj["recalibrating"]; ok && json.Unmarshal(raw, &recal) != nil {
		a.fail(w, r, errorf(engine.CodeInvalidRequest, "recalibrating must be a boolean"))
		return
	}
	var cost int64
	if !recal {
		if cost, err = intField(obj, "credit_cost"); err != nil {
			a.fail(w, r, err)
			return
		}
	}
	p, seq, err := a.cfg.Engine.SetPrice(r.Context(), mux.Vars(r)["slug"], cost, recal)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.stored(r, seq, "price set")
	writeJSON(w, http.StatusOK, p)
}
