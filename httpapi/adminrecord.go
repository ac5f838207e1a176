package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/service"
	"github.com/gorilla/mux"
)

// The operator's side of run records: any run's record and replay, an
// account's runs exported over a period, and every run of an App over a
// period replayed (docs/api.md, "Run records").

// maxRunsPerCall bounds the runs one export or bulk replay takes (and
// ?limit= lowers it): a call past it says more, with the cursor to go on
// from, to the older runs.
const maxRunsPerCall = 5000

// budgetOf is ?limit= (1 to maxRunsPerCall; maxRunsPerCall when absent).
func budgetOf(r *http.Request) (int, error) {
	v, err := valueOnce(r.URL.Query(), "limit")
	if err != nil || v == "" {
		return maxRunsPerCall, err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxRunsPerCall {
		return 0, errorf(engine.CodeInvalidRequest, "limit must be a whole number from 1 to %d", maxRunsPerCall)
	}
	return n, nil
}

func (a *API) routeAdminRecords(r *mux.Router) {
	r.HandleFunc("/runs/export", a.admin(a.exportRuns)).Methods(http.MethodGet)
	r.HandleFunc("/runs/replay", a.admin(a.replayRuns)).Methods(http.MethodPost)
	r.HandleFunc("/runs/{run_no}/record", a.admin(a.adminRecord)).Methods(http.MethodGet)
	r.HandleFunc("/runs/{run_no}/replay", a.admin(a.replayRun)).Methods(http.MethodPost)
}

// IsLongAdmin says whether r asks the admin API for an answer that may
// take longer than a request's time, which the edge does not cut at
// RequestTimeout: a read-model snapshot (as long as the read models are
// large; the copy is made on the node's disk first), an export of runs,
// a bulk replay.
func IsLongAdmin(r *http.Request) bool {
	switch r.URL.Path {
	case "/admin/v1/read-models/snapshot", "/admin/v1/runs/export", "/admin/v1/runs/replay":
		return true
	}
	return false
}

func (a *API) adminRecord(w http.ResponseWriter, r *http.Request) {
	rec, err := a.cfg.Engine.RunRecordAdmin(r.Context(), mux.Vars(r)["run_no"])
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, RecordDocumentOf(rec))
}

// replayRun handles POST /admin/v1/runs/{run_no}/replay.
func (a *API) replayRun(w http.ResponseWriter, r *http.Request) {
	rep, err := a.cfg.Engine.ReplayRun(r.Context(), mux.Vars(r)["run_no"])
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// period is an export's or a bulk replay's ?from= and ?to= (a date's
// to includes its day).
type period struct{ from, to time.Time }

func (p period) holds(t time.Time) bool {
	return (p.from.IsZero() || !t.Before(p.from)) && (p.to.IsZero() || t.Before(p.to))
}

// periodFor is the request's required parameter name (an account, an
// App) and its period; it refuses a parameter the call does not take.
func periodFor(r *http.Request, name string) (string, period, error) {
	q := r.URL.Query()
	for k := range q {
		switch k {
		case name, "from", "to", "limit", "cursor":
		default:
			return "", period{}, errorf(engine.CodeInvalidRequest, "unknown query parameter %q: this call takes %s, from, to, limit and cursor", k, name)
		}
	}
	v, err := valueOnce(q, name)
	if err == nil && v == "" {
		err = errorf(engine.CodeInvalidRequest, "%s is required", name)
	}
	if err != nil {
		return "", period{}, err
	}
	from, err := timeParam(q, "from", false)
	if err != nil {
		return "", period{}, err
	}
	to, err := timeParam(q, "to", true)
	if err == nil && !from.IsZero() && !to.IsZero() && !from.Before(to) {
		err = errorf(engine.CodeInvalidRequest, "from must be before to")
	}
	return v, period{from, to}, err
}

// runsIn calls fn with each run of account made in p that keep takes,
// newest first, from before (a run's created sequence, exclusive; 0: the
// newest) on, until fn has taken *budget of them. It returns the cursor
// to go on from: the created sequence + 1 of the first run it left, 0
// when none is left.
func (a *API) runsIn(accountID string, p period, before uint64, keep func(engine.Run) bool, budget *int, fn func(engine.Run) error) (uint64, error) {
	for {
		runs, next, err := a.cfg.Reads.RunsOf(accountID, before, 100)
		if err != nil {
			return 0, err
		}
		for _, run := range runs {
			if !p.from.IsZero() && run.CreatedAt.Before(p.from) {
				return 0, nil // newest first: the rest are older
			}
			if !p.holds(run.CreatedAt) || !keep(run) {
				continue
			}
			if *budget == 0 {
				return run.CreatedSeq + 1, nil
			}
			*budget--
			if err := fn(run); err != nil {
				return 0, err
			}
		}
		if next == 0 || len(runs) == 0 {
			return 0, nil
		}
		before = next
	}
}

// exportRuns handles GET /admin/v1/runs/export?account_id=…&from=…&to=…
// [&cursor=…]: JSON Lines, one record document a run, newest first; past
// maxRunsPerCall a last line {"more":true,"next_cursor":"…"} to call
// again with, for the older runs left.
func (a *API) exportRuns(w http.ResponseWriter, r *http.Request) {
	id, p, err := periodFor(r, "account_id")
	if err == nil {
		_, err = a.account(id)
	}
	var before uint64
	if err == nil {
		before, err = cursorParam(r)
	}
	budget := 0
	if err == nil {
		budget, err = budgetOf(r)
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	next, err := a.runsIn(id, p, before, func(engine.Run) bool { return true }, &budget, func(run engine.Run) error {
		rec, err := a.cfg.Engine.RunRecordAdmin(r.Context(), run.RunNo)
		var e *engine.Error
		if errors.As(err, &e) && e.Code == engine.CodeRunNotFound {
			return nil // gone with its retention since it was listed
		}
		if err != nil {
			return err
		}
		return enc.Encode(RecordDocumentOf(rec))
	})
	switch {
	case err != nil:
		// Lines were sent: the answer ends with the error as its last line.
		_ = enc.Encode(map[string]any{"error": map[string]string{"code": string(engine.CodeInternal), "message": "the export stopped: " + err.Error()}})
	case next != 0:
		_ = enc.Encode(map[string]any{"more": true, "next_cursor": strconv.FormatUint(next, 10)})
	}
}

// cursorParam is ?cursor=, a run's created sequence to go on below.
func cursorParam(r *http.Request) (uint64, error) {
	v, err := valueOnce(r.URL.Query(), "cursor")
	if err != nil || v == "" {
		return 0, err
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, errorf(engine.CodeInvalidRequest, "cursor must be the next_cursor of the call before")
	}
	return n, nil
}

// replayRuns handles POST /admin/v1/runs/replay?app_slug=…&from=…&to=…
// [&cursor=…]: every finished run of the App made in the period, account
// by account, replayed; the counts, and the report of each run that did
// not replay identically. Past maxRunsPerCall it says more, with the
// next_cursor ("<account_id>.<seq>") to call again with.
func (a *API) replayRuns(w http.ResponseWriter, r *http.Request) {
	slug, p, err := periodFor(r, "app_slug")
	if err == nil {
		if _, lerr := a.cfg.Engine.Catalog().Lookup(slug); lerr != nil {
			err = lerr // a mistyped App replays nothing, and must not look like a pass
		}
	}
	var from string
	var before uint64
	if err == nil {
		from, before, err = replayCursor(r)
	}
	budget := 0
	if err == nil {
		budget, err = budgetOf(r)
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := struct {
		AppSlug    string                 `json:"app_slug"`
		Replayed   int                    `json:"replayed"`
		Identical  int                    `json:"identical"`
		Differing  int                    `json:"differing"`
		NotRecord  int                    `json:"not_replayable"`
		More       bool                   `json:"more"`
		NextCursor string                 `json:"next_cursor,omitempty"`
		Reports    []service.ReplayReport `json:"differing_runs"`
		Unreplayed []map[string]string    `json:"not_replayable_runs"`
	}{AppSlug: slug, Reports: []service.ReplayReport{}, Unreplayed: []map[string]string{}}
	replay := func(run engine.Run) error {
		rep, err := a.cfg.Engine.ReplayRun(r.Context(), run.RunNo)
		switch {
		case err != nil && r.Context().Err() != nil:
			return r.Context().Err()
		case err != nil:
			out.NotRecord++
			out.Unreplayed = append(out.Unreplayed, map[string]string{"run_no": run.RunNo, "reason": err.Error()})
		case rep.Identical:
			out.Replayed++
			out.Identical++
		default:
			out.Replayed++
			out.Differing++
			out.Reports = append(out.Reports, rep)
		}
		return nil
	}
	ofApp := func(run engine.Run) bool { return run.AppSlug == slug && run.Terminal() }
	// The cursor's account first, from its run on; then the accounts after.
	accounts := []ledger.Account{}
	if from != "" {
		accounts = append(accounts, ledger.Account{ID: from})
	}
	after := from
	for {
		for _, acct := range accounts {
			next, err := a.runsIn(acct.ID, p, before, ofApp, &budget, replay)
			if err != nil {
				a.fail(w, r, err)
				return
			}
			before = 0
			if next != 0 {
				out.More, out.NextCursor = true, acct.ID+"."+strconv.FormatUint(next, 10)
				writeJSON(w, http.StatusOK, out)
				return
			}
		}
		var next string
		accounts, next, err = a.cfg.Reads.Accounts(after, 100)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		if len(accounts) == 0 {
			break
		}
		if next == "" {
			next = accounts[len(accounts)-1].ID
		}
		after = next
	}
	writeJSON(w, http.StatusOK, out)
}

// replayCursor is a bulk replay's ?cursor=: the account and the created
// sequence to go on from.
func replayCursor(r *http.Request) (string, uint64, error) {
	v, err := valueOnce(r.URL.Query(), "cursor")
	if err != nil || v == "" {
		return "", 0, err
	}
	id, seq, ok := strings.Cut(v, ".")
	n, perr := strconv.ParseUint(seq, 10, 64)
	if !ok || perr != nil || !engine.ValidID(engine.PrefixAccount, id) {
		return "", 0, errorf(engine.CodeInvalidRequest, "cursor must be the next_cursor of the call before")
	}
	return id, n, nil
}
