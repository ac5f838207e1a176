package httpapi

import (
	"net/http"

	"github.com/apprun/apprun/engine"
	"github.com/gorilla/mux"
)

func (a *API) routeWebhooks() {
	a.router.HandleFunc("/api/v1/webhooks/secret", a.reader(a.webhookSecret)).Methods(http.MethodGet)
	a.router.HandleFunc("/api/v1/webhooks/deliveries", a.reader(a.webhookDeliveries)).Methods(http.MethodGet)
	a.router.HandleFunc("/api/v1/webhooks/deliveries/{run_no}/redeliver", a.reader(a.redeliver)).Methods(http.MethodPost)
	a.router.HandleFunc("/api/v1/webhooks/endpoints", a.reader(a.listEndpoints)).Methods(http.MethodGet)
	a.router.HandleFunc("/api/v1/webhooks/endpoints", a.reader(a.addEndpoint)).Methods(http.MethodPost)
	a.router.HandleFunc("/api/v1/webhooks/endpoints/{endpoint_id}", a.reader(a.removeEndpoint)).Methods(http.MethodDelete)
}

func (a *API) listEndpoints(w http.ResponseWriter, r *http.Request, c caller) {
	list, _, err := a.cfg.Engine.WebhookEndpoints(r.Context(), c.AccountID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeList(w, list)
}

// addEndpoint registers {"url": …} for the account's future runs (201).
func (a *API) addEndpoint(w http.ResponseWriter, r *http.Request, c caller) {
	obj, err := readJSONObject(w, r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if err := onlyFields(obj, "url"); err != nil {
		a.fail(w, r, err)
		return
	}
	u, ok, err := stringField(obj, "url")
	if err == nil && !ok {
		err = errorf(engine.CodeInvalidRequest, "url is required")
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	ep, err := a.cfg.Engine.AddWebhookEndpoint(r.Context(), c.AccountID, u)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, ep)
}

func (a *API) removeEndpoint(w http.ResponseWriter, r *http.Request, c caller) {
	if err := a.cfg.Engine.RemoveWebhookEndpoint(r.Context(), c.AccountID, mux.Vars(r)["endpoint_id"]); err != nil {
		a.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// webhookSecret answers the account's signing secret (made on first use).
func (a *API) webhookSecret(w http.ResponseWriter, r *http.Request, c caller) {
	s, err := a.cfg.Engine.WebhookSecret(r.Context(), c.AccountID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"secret": s})
}

// webhookDeliveries is the delivery log: the newest 100 deliveries.
func (a *API) webhookDeliveries(w http.ResponseWriter, r *http.Request, c caller) {
	ds, err := a.cfg.Engine.Deliveries(r.Context(), c.AccountID, 100)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if ds == nil {
		writeJSON(w, http.StatusOK, map[string]any{"data": []any{}})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": ds})
}

// redeliver queues a finished run's webhook again (202).
func (a *API) redeliver(w http.ResponseWriter, r *http.Request, c caller) {
	if err := a.cfg.Engine.Redeliver(r.Context(), c.AccountID, mux.Vars(r)["run_no"]); err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"queued": true})
}
