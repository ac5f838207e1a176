package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
	"github.com/gorilla/mux"
)

func (a *API) routeAdmin() {
	r := a.router.PathPrefix("/admin/v1").Subrouter()
	r.HandleFunc("/accounts", a.adminAs(a.openAccount)).Methods(http.MethodPost)
	r.HandleFunc("/accounts", a.admin(a.listAccounts)).Methods(http.MethodGet)
	r.HandleFunc("/accounts/{account_id}", a.admin(a.adminAccount)).Methods(http.MethodGet)
	r.HandleFunc("/accounts/{account_id}/ledger", a.admin(a.adminStatement)).Methods(http.MethodGet)
	r.HandleFunc("/accounts/{account_id}/credits", a.adminAs(a.grantCredits)).Methods(http.MethodPost)
	r.HandleFunc("/accounts/{account_id}/adjustments", a.adminAs(a.adjustCredits)).Methods(http.MethodPost)
	r.HandleFunc("/accounts/{account_id}/keys", a.adminAs(a.createKey)).Methods(http.MethodPost)
	r.HandleFunc("/keys/{key_id}", a.adminAs(a.revokeKey)).Methods(http.MethodDelete)
	r.HandleFunc("/apps/{slug}/price", a.adminAs(a.setPrice)).Methods(http.MethodPut)
	r.HandleFunc("/apps/{slug}/prices", a.admin(a.priceHistory)).Methods(http.MethodGet)
	r.HandleFunc("/ledger/checkpoint", a.admin(a.logCheckpoint)).Methods(http.MethodPost)
	r.HandleFunc("/read-models/snapshot", a.adminAs(a.readModelSnapshot)).Methods(http.MethodGet)
	a.routeAdminRecords(r)
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

// reasonField decodes the reason member: required, unless optional.
func reasonField(obj map[string]json.RawMessage, optional bool) (string, error) {
	reason, ok, err := stringField(obj, "reason")
	if err == nil && !ok && !optional {
		err = errorf(engine.CodeInvalidRequest, "reason is required: say why, for the statement and the audit")
	}
	return reason, err
}

// openAccount handles POST /admin/v1/accounts {"email","credits","reason"}.
func (a *API) openAccount(w http.ResponseWriter, r *http.Request, ad admin) {
	obj, err := readJSONObject(w, r)
	if err == nil {
		err = onlyFields(obj, "email", "credits", "reason")
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
	reason, err := reasonField(obj, true)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	acct, err := a.cfg.Engine.OpenAccount(r.Context(), email, credits, ad.by(reason))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.adminDid(ad, "account_opened", acct.Seq, "account_id", acct.AccountID, "key_id", acct.KeyID, "credits", credits, "reason", reason)
	a.stored(r, acct.Seq, "account opened")
	writeJSON(w, http.StatusCreated, map[string]any{"account_id": acct.AccountID, "api_key": acct.APIKey, "key_id": acct.KeyID})
}

// grantCredits handles POST /admin/v1/accounts/{account_id}/credits
// {"amount","reason"}.
func (a *API) grantCredits(w http.ResponseWriter, r *http.Request, ad admin) {
	a.moveCredits(w, r, ad, "credits_granted", a.cfg.Engine.GrantCredits)
}

// adjustCredits handles POST /admin/v1/accounts/{account_id}/adjustments
// {"amount","reason"}: a correction in either direction, never below zero.
func (a *API) adjustCredits(w http.ResponseWriter, r *http.Request, ad admin) {
	a.moveCredits(w, r, ad, "credits_adjusted", a.cfg.Engine.AdjustCredits)
}

func (a *API) moveCredits(w http.ResponseWriter, r *http.Request, ad admin, action string,
	move func(ctx context.Context, id string, amount int64, by ledger.By) (int64, uint64, error)) {
	obj, err := readJSONObject(w, r)
	if err == nil {
		err = onlyFields(obj, "amount", "reason")
	}
	var amount int64
	if err == nil {
		amount, err = intField(obj, "amount")
	}
	var reason string
	if err == nil {
		reason, err = reasonField(obj, false)
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	id := mux.Vars(r)["account_id"]
	balance, seq, err := move(r.Context(), id, amount, ad.by(reason))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.adminDid(ad, action, seq, "account_id", id, "amount", amount, "balance", balance, "reason", reason)
	a.stored(r, seq, action)
	writeJSON(w, http.StatusOK, map[string]any{"balance": balance, "seq": seq})
}

// createKey handles POST /admin/v1/accounts/{account_id}/keys.
func (a *API) createKey(w http.ResponseWriter, r *http.Request, ad admin) {
	k, err := a.cfg.Engine.CreateKey(r.Context(), mux.Vars(r)["account_id"], "")
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.adminDid(ad, "key_created", k.Seq, "account_id", mux.Vars(r)["account_id"], "key_id", k.KeyID)
	a.stored(r, k.Seq, "key created")
	writeJSON(w, http.StatusCreated, map[string]any{"key_id": k.KeyID, "api_key": k.APIKey})
}

// revokeKey handles DELETE /admin/v1/keys/{key_id}: the key fails at once.
func (a *API) revokeKey(w http.ResponseWriter, r *http.Request, ad admin) {
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
	a.adminDid(ad, "key_revoked", seq, "key_id", mux.Vars(r)["key_id"])
	w.WriteHeader(http.StatusNoContent)
}

// setPrice handles PUT /admin/v1/apps/{slug}/price {"credit_cost": n} or
// {"recalibrating": true}, with a "reason".
func (a *API) setPrice(w http.ResponseWriter, r *http.Request, ad admin) {
	obj, err := readJSONObject(w, r)
	if err == nil {
		err = onlyFields(obj, "credit_cost", "recalibrating", "reason")
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
	reason, err := reasonField(obj, false)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	slug := mux.Vars(r)["slug"]
	p, seq, err := a.cfg.Engine.SetPrice(r.Context(), slug, cost, recal, ad.by(reason))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.adminDid(ad, "price_set", seq, "slug", slug, "credit_cost", cost, "recalibrating", recal, "reason", reason)
	a.stored(r, seq, "price set")
	writeJSON(w, http.StatusOK, p)
}

// listAccounts handles GET /admin/v1/accounts?limit=&cursor=: accounts by
// id, each with its balance; the cursor is the last id shown.
func (a *API) listAccounts(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for name := range q {
		if name != "limit" && name != "cursor" {
			a.fail(w, r, errorf(engine.CodeInvalidRequest, "unknown query parameter %q: accounts take limit and cursor", name))
			return
		}
	}
	limit := 100
	if v, err := valueOnce(q, "limit"); err != nil {
		a.fail(w, r, err)
		return
	} else if v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			a.fail(w, r, errorf(engine.CodeInvalidRequest, "limit must be an integer from 1 to 1000"))
			return
		}
		limit = n
	}
	cursor, err := valueOnce(q, "cursor")
	if err != nil {
		a.fail(w, r, err)
		return
	}
	accts, next, err := a.cfg.Reads.Accounts(cursor, limit)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	data := make([]map[string]any, 0, len(accts))
	for _, acct := range accts {
		data = append(data, accountJSON(acct))
	}
	var nc *string
	if next != "" {
		nc = &next
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data, "next_cursor": nc})
}

func accountJSON(acct ledger.Account) map[string]any {
	return map[string]any{"account_id": acct.ID, "email": acct.Email, "balance": acct.Balance, "active_runs": acct.Active,
		"created_at": acct.CreatedAt}
}

// adminAccount handles GET /admin/v1/accounts/{account_id}.
func (a *API) adminAccount(w http.ResponseWriter, r *http.Request) {
	acct, err := a.account(mux.Vars(r)["account_id"])
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, accountJSON(acct))
}

// account reads an account from the read models: account_not_found when
// they have none.
func (a *API) account(id string) (ledger.Account, error) {
	acct, err := a.cfg.Reads.Account(id)
	if errors.Is(err, port.ErrNotFound) {
		err = errorf(engine.CodeAccountNotFound, "no account %q", id)
	}
	return acct, err
}

// adminStatement handles GET /admin/v1/accounts/{account_id}/ledger: the
// account's statement, as its owner gets it.
func (a *API) adminStatement(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["account_id"]
	if _, err := a.account(id); err != nil {
		a.fail(w, r, err)
		return
	}
	a.writeStatement(w, r, id)
}

// priceHistory handles GET /admin/v1/apps/{slug}/prices: every price the
// App had, oldest first, with its time, actor and reason.
func (a *API) priceHistory(w http.ResponseWriter, r *http.Request) {
	prices, err := a.cfg.Engine.PriceHistory(r.Context(), mux.Vars(r)["slug"])
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeList(w, prices)
}
