package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/service"
	"github.com/gorilla/mux"
)

// A run's record, its rerun and its comparison (docs/api.md, "Run
// records"); the operator's export and replay are in adminrecord.go.

func (a *API) routeRecords() {
	a.router.HandleFunc("/api/v1/runs/{run_no}/record", a.reader(a.getRecord)).Methods(http.MethodGet)
	a.router.HandleFunc("/api/v1/runs/{run_no}/compare", a.reader(a.compareRuns)).Methods(http.MethodGet)
	a.router.HandleFunc("/api/v1/runs/{run_no}/rerun", a.keyed(a.rerunRun)).Methods(http.MethodPost)
}

// RecordDocument is a run's record as the API, the export and a replay
// of a file read it: the run as GET /api/v1/runs/{run_no} shows it, and
// the record (service.RunRecord).
type RecordDocument struct {
	Run runView `json:"run"`
	service.RunRecord
}

// RecordDocumentOf is rec as a document.
func RecordDocumentOf(rec service.RunRecord) RecordDocument {
	return RecordDocument{Run: viewOf(rec.Run), RunRecord: rec}
}

// DecodeRecordDocument reads a record document (one line of an export,
// or a downloaded record) back into the record a replay takes. The record
// is rebuilt from the document's events, the log's own messages, and
// every other member must say what they say: a document edited apart from
// its events (a status, an output, a step, the head's hash) is refused,
// naming the member.
func DecodeRecordDocument(data []byte) (service.RunRecord, error) {
	var d RecordDocument
	if err := json.Unmarshal(data, &d); err != nil {
		return service.RunRecord{}, err
	}
	if d.RecordVersion != service.RecordVersion {
		return service.RunRecord{}, errors.New("not a run record document (record_version 1)")
	}
	rec, err := service.RecordFromEvents(d.Events, d.Ledger)
	if err != nil {
		return service.RunRecord{}, err
	}
	var given, rebuilt map[string]json.RawMessage
	again, _ := json.Marshal(RecordDocumentOf(rec))
	if json.Unmarshal(data, &given) != nil || json.Unmarshal(again, &rebuilt) != nil {
		return service.RunRecord{}, errors.New("not a run record document")
	}
	for _, k := range slices.Sorted(maps.Keys(rebuilt)) {
		if !service.SameJSON(given[k], rebuilt[k]) {
			return service.RunRecord{}, fmt.Errorf("the document's %s is not what its events say (edited?)", k)
		}
	}
	return rec, nil
}

// getRecord handles GET /api/v1/runs/{run_no}/record.
func (a *API) getRecord(w http.ResponseWriter, r *http.Request, c caller) {
	rec, err := a.cfg.Engine.RunRecord(r.Context(), c.AccountID, mux.Vars(r)["run_no"])
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, RecordDocumentOf(rec))
}

// compareRuns handles GET /api/v1/runs/{run_no}/compare?with=….
func (a *API) compareRuns(w http.ResponseWriter, r *http.Request, c caller) {
	with, err := valueOnce(r.URL.Query(), "with")
	for k := range r.URL.Query() {
		if k != "with" && err == nil {
			err = errorf(engine.CodeInvalidRequest, "unknown query parameter %q: compare takes with", k)
		}
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	cmp, err := a.cfg.Engine.Compare(r.Context(), c.AccountID, mux.Vars(r)["run_no"], with)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, cmp)
}

// rerunRun handles POST /api/v1/runs/{run_no}/rerun: a create, with the
// create's window, checks and Idempotency-Key.
func (a *API) rerunRun(w http.ResponseWriter, r *http.Request, c caller) {
	obj, err := a.createBody(w, r, c)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	req := service.RerunRequest{AccountID: c.AccountID, KeyID: c.KeyID, RunNo: mux.Vars(r)["run_no"]}
	if err := onlyFields(obj, "model", "input", "max_credit_cost"); err != nil {
		a.fail(w, r, err)
		return
	}
	if req.Model, _, err = stringField(obj, "model"); err != nil {
		a.fail(w, r, err)
		return
	}
	if raw, ok := obj["input"]; ok && string(raw) != "null" {
		if json.Unmarshal(raw, &req.Input) != nil || req.Input == nil {
			a.fail(w, r, errorf(engine.CodeInvalidRequest, "input must be an object: the members to change"))
			return
		}
	}
	if req.MaxCreditCost, err = maxCreditCost(obj); err != nil {
		a.fail(w, r, err)
		return
	}
	if req.IdempotencyKey, err = idempotencyKey(r); err != nil {
		a.fail(w, r, err)
		return
	}
	run, changes, err := a.cfg.Engine.Rerun(r.Context(), req)
	setQuota(w, run.Quota)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if changes == nil {
		changes = []string{}
	}
	writeCreated(w, run, map[string]any{"rerun_of": req.RunNo, "changed": changes})
}
