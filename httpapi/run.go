package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service"
	"github.com/gorilla/mux"
)

// routeRuns registers the runs' routes. The router tries routes in the
// order they were added, and a run's GET is the API's busiest request: it
// comes first, ahead of routeHealth, so that it is matched without first
// failing the others' patterns.
func (a *API) routeRuns() {
	a.router.HandleFunc(runRoute, a.reader(a.getRun)).Methods(http.MethodGet) // and ahead of the router: runroute.go
	a.router.HandleFunc("/api/v1/runs", a.keyed(a.createRun)).Methods(http.MethodPost)
	a.router.HandleFunc("/api/v1/runs", a.reader(a.listRuns)).Methods(http.MethodGet)
	a.router.HandleFunc("/api/v1/runs/{run_no}/cancel", a.reader(a.cancelRun)).Methods(http.MethodPost)
	a.routeRecords()
}

// cancelRun handles POST /api/v1/runs/{run_no}/cancel: 200 with the
// canceled run (again for a run already canceled), 409
// run_already_finished for a completed or failed one.
func (a *API) cancelRun(w http.ResponseWriter, r *http.Request, c caller) {
	runNo := mux.Vars(r)["run_no"]
	run, seq, err := a.cfg.Engine.CancelRun(r.Context(), c.AccountID, runNo)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.stored(r, seq, "run canceled")
	writeJSON(w, http.StatusOK, viewOf(run))
}

// createRun handles POST /api/v1/runs. The key (401, keyed) and a full
// creation window (429) are checked from the headers, before the body is
// read; then the body (400) and the engine's 402/404/409/422/429
// (docs/decisions.md). A create counts against the creation window, not
// the read limit.
func (a *API) createRun(w http.ResponseWriter, r *http.Request, c caller) {
	obj, err := a.createBody(w, r, c)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	body, err := decodeCreateRun(obj)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	req := service.CreateRunRequest{AccountID: c.AccountID, KeyID: c.KeyID,
		AppSlug: body.AppSlug, Input: body.Input, BrandContextID: body.BrandContextID, MaxCreditCost: body.MaxCreditCost,
		WebhookURL: body.WebhookURL}
	if req.IdempotencyKey, err = idempotencyKey(r); err != nil {
		a.fail(w, r, err)
		return
	}
	run, err := a.cfg.Engine.CreateRun(r.Context(), req)
	setQuota(w, run.Quota)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeCreated(w, run, nil)
}

// createBody is a create's body (a run's, a rerun's), read once the key's
// creation window is known to have room: a full window answers 429 from
// the headers, before the body is read.
func (a *API) createBody(w http.ResponseWriter, r *http.Request, c caller) (map[string]json.RawMessage, error) {
	if q, err := a.cfg.Engine.CreateWindowFull(c.KeyID); err != nil {
		setQuota(w, q)
		return nil, err
	}
	return readJSONObject(w, r)
}

// writeCreated answers a create: 201 with the run's number, price and
// addresses (and extra), Location, and Idempotent-Replayed for a replay.
// It does not wait for the read models: every read of a run or an
// account waits for the creates answered before it (Reads).
func writeCreated(w http.ResponseWriter, run service.CreatedRun, extra map[string]any) {
	if run.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.Header().Set("Location", resultURL(run.RunNo))
	body := map[string]any{"run_no": run.RunNo, "credit_cost": run.CreditCost,
		"stream_url": streamURL(run.RunNo), "result_url": resultURL(run.RunNo)}
	maps.Copy(body, extra)
	writeJSON(w, http.StatusCreated, body)
}

// streamURL and resultURL are the relative paths of a run's event stream
// and result (a terminal event names the same result_url: engine.RunEvent's
// PublicData).
func streamURL(runNo string) string { return "/api/v1/runs/" + runNo + "/events" }

func resultURL(runNo string) string { return "/api/v1/runs/" + runNo }

// createRunBody is POST /api/v1/runs decoded.
type createRunBody struct {
	AppSlug        string
	Input          map[string]any
	BrandContextID *string
	MaxCreditCost  *int64
	WebhookURL     string
}

// decodeCreateRun applies rule 1: a JSON object with a string app_slug, an
// object input, an optional string brand_context_id, nothing else. (No
// file fields anywhere in input is CreateRun's rule, for every surface.)
func decodeCreateRun(obj map[string]json.RawMessage) (createRunBody, error) {
	var b createRunBody
	if err := onlyFields(obj, "app_slug", "input", "brand_context_id", "max_credit_cost", "webhook_url"); err != nil {
		return b, err
	}
	slug, ok, err := stringField(obj, "app_slug")
	if err != nil {
		return b, err
	}
	if !ok || slug == "" {
		return b, errorf(engine.CodeInvalidRequest, "app_slug is required")
	}
	b.AppSlug = slug
	raw, ok := obj["input"]
	if !ok || string(raw) == "null" {
		return b, errorf(engine.CodeInvalidRequest, "input is required and must be an object")
	}
	if err := json.Unmarshal(raw, &b.Input); err != nil || b.Input == nil {
		return b, errorf(engine.CodeInvalidRequest, "input must be a JSON object")
	}
	if id, ok, err := stringField(obj, "brand_context_id"); err != nil {
		return b, err
	} else if ok {
		b.BrandContextID = &id
	}
	if b.MaxCreditCost, err = maxCreditCost(obj); err != nil {
		return b, err
	}
	if u, ok, err := stringField(obj, "webhook_url"); err != nil {
		return b, err
	} else if ok {
		b.WebhookURL = u
	}
	return b, nil
}

// maxCreditCost is a body's max_credit_cost (nil when absent).
func maxCreditCost(obj map[string]json.RawMessage) (*int64, error) {
	raw, ok := obj["max_credit_cost"]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil || n < 0 || strings.ContainsAny(string(raw), ".eE") {
		return nil, errorf(engine.CodeInvalidRequest, "max_credit_cost must be a whole number of Credits, 0 or more")
	}
	return &n, nil
}

// runView is a run as the API shows it.
type runView struct {
	RunNo      string           `json:"run_no"`
	AppSlug    string           `json:"app_slug"`
	Status     engine.Status    `json:"status"`
	CreditCost int64            `json:"credit_cost"`
	CreatedAt  time.Time        `json:"created_at"`
	StartedAt  *time.Time       `json:"started_at,omitempty"`
	FinishedAt *time.Time       `json:"finished_at,omitempty"`
	StreamURL  string           `json:"stream_url"`
	ResultURL  string           `json:"result_url"`
	Summary    *string          `json:"summary,omitempty"`
	Output     json.RawMessage  `json:"output,omitempty"`
	Error      *engine.RunError `json:"error,omitempty"`
	Refunded   *int64           `json:"refunded_credits,omitempty"`
	Usage      *engine.RunUsage `json:"usage,omitempty"`
}

func viewOf(run engine.Run) runView {
	v := runView{RunNo: run.RunNo, AppSlug: run.AppSlug, Status: run.Status, CreditCost: run.CreditCost,
		CreatedAt: run.CreatedAt, StartedAt: run.StartedAt, FinishedAt: run.FinishedAt,
		StreamURL: streamURL(run.RunNo), ResultURL: resultURL(run.RunNo), Usage: run.Usage}
	switch run.Status {
	case engine.StatusCompleted:
		v.Summary, v.Output = &run.Summary, run.Output
	case engine.StatusFailed:
		v.Error, v.Refunded = run.Error, &run.Refunded
		v.Summary, v.Output = failureSummary(run), json.RawMessage("null")
	}
	return v
}

// failureSummary is a failed run's summary: one sentence saying what
// failed and that the Credits came back (a terminal run's result is its
// summary and its output; a failed run has no output).
func failureSummary(run engine.Run) *string {
	if run.Canceled() {
		sum := fmt.Sprintf("The run was canceled; its %s refunded.", credits(run.Refunded))
		return &sum
	}
	why := "it failed"
	if run.Error != nil {
		why = fmt.Sprintf("%s (%s)", lowerFirst(strings.TrimSuffix(run.Error.Message, ".")), run.Error.Code)
	}
	sum := fmt.Sprintf("The run failed: %s; its %s refunded.", why, credits(run.Refunded))
	return &sum
}

// lowerFirst is s with its first letter lower case, unless it starts an
// acronym ("HTTP").
func lowerFirst(s string) string {
	r := []rune(s)
	if len(r) > 1 && unicode.IsUpper(r[0]) && !unicode.IsUpper(r[1]) {
		r[0] = unicode.ToLower(r[0])
	}
	return string(r)
}

func credits(n int64) string {
	if n == 1 {
		return "1 Credit was"
	}
	return fmt.Sprintf("%d Credits were", n)
}

// ownRun reads a run of the caller's account; any other run is not found.
func (a *API) ownRun(r *http.Request, c caller) (engine.Run, error) {
	runNo := runNoOf(r)
	if !engine.ValidID(engine.PrefixRun, runNo) {
		return engine.Run{}, errorf(engine.CodeRunNotFound, "no run %q", runNo)
	}
	run, err := a.cfg.Reads.Run(runNo)
	if errors.Is(err, port.ErrNotFound) {
		// Created on another node a moment ago? The log knows.
		if seq, serr := a.cfg.Engine.RunSeq(r.Context(), runNo); serr == nil && a.awaitRead(r.Context(), seq) == nil {
			run, err = a.cfg.Reads.Run(runNo)
		}
	}
	if errors.Is(err, port.ErrNotFound) || (err == nil && run.AccountID != c.AccountID) {
		return engine.Run{}, errorf(engine.CodeRunNotFound, "no run %q", runNo)
	}
	return run, err
}

// getRun handles GET /api/v1/runs/{run_no}.
func (a *API) getRun(w http.ResponseWriter, r *http.Request, c caller) {
	run, err := a.ownRun(r, c)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	body, err := a.views.body(run)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeRaw(w, http.StatusOK, body)
}

// listRuns handles GET /api/v1/runs: newest first, ?limit=1..100 (20),
// ?cursor= from the previous page's next_cursor.
func (a *API) listRuns(w http.ResponseWriter, r *http.Request, c caller) {
	pg, err := pageOf(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	runs, next, err := a.cfg.Reads.RunsOf(c.AccountID, pg.before, pg.limit)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	data := make([]runView, len(runs))
	for i, run := range runs {
		data[i] = viewOf(run)
	}
	writePage(w, data, next)
}

// idempotencyKey is the request's Idempotency-Key ("" when none).
func idempotencyKey(r *http.Request) (string, error) {
	if _, ok := r.Header[http.CanonicalHeaderKey("Idempotency-Key")]; !ok {
		return "", nil
	}
	key, err := headerOnce(r, "Idempotency-Key")
	if err != nil {
		return "", err
	}
	if !service.ValidIdempotencyKey(key) {
		return "", errorf(engine.CodeInvalidRequest, "Idempotency-Key must be 1 to %d printable ASCII characters", service.MaxIdempotencyKey)
	}
	return key, nil
}
