package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/service"
	"github.com/gorilla/mux"
)

// The operator's side of run records: any run's record and replay, an
// account's runs exported over a period, and every run of an App over a
// period replayed (docs/api.md, "Run records").

// maxRunsPerCall bounds the runs one export or bulk replay reads: a call
// past it says more and is made again for the period after.
const maxRunsPerCall = 5000

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
// App) and its period.
func periodFor(r *http.Request, name string) (string, period, error) {
	q := r.URL.Query()
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
	return v, period{from, to}, err
}

// runsIn calls fn with each run of account made in p, newest first, up
// to maxRunsPerCall; it says whether more were left.
func (a *API) runsIn(accountID string, p period, fn func(engine.Run) error) (more bool, n int, err error) {
	var before uint64
	for {
		runs, next, err := a.cfg.Reads.RunsOf(accountID, before, 100)
		if err != nil {
			return false, n, err
		}
		for _, run := range runs {
			if !p.from.IsZero() && run.CreatedAt.Before(p.from) {
				return false, n, nil // newest first: the rest are older
			}
			if !p.holds(run.CreatedAt) {
				continue
			}
			if n == maxRunsPerCall {
				return true, n, nil
			}
			n++
			if err := fn(run); err != nil {
				return false, n, err
			}
		}
		if next == 0 || len(runs) == 0 {
			return false, n, nil
		}
		before = next
	}
}

// exportRuns handles GET /admin/v1/runs/export?account_id=…&from=…&to=…:
// JSON Lines, one record document a run, newest first; a last line
// {"more":true} when the call stopped at maxRunsPerCall.
func (a *API) exportRuns(w http.ResponseWriter, r *http.Request) {
	id, p, err := periodFor(r, "account_id")
	if err == nil {
		_, err = a.account(id)
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	more, _, err := a.runsIn(id, p, func(run engine.Run) error {
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
	case more:
		_ = enc.Encode(map[string]any{"more": true})
	}
}

// replayRuns handles POST /admin/v1/runs/replay?app_slug=…&from=…&to=…:
// every run of the App made in the period, over every account, replayed;
// the counts, and the report of each run that did not replay identically.
func (a *API) replayRuns(w http.ResponseWriter, r *http.Request) {
	slug, p, err := periodFor(r, "app_slug")
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
		Reports    []service.ReplayReport `json:"differing_runs"`
		Unreplayed []map[string]string    `json:"not_replayable_runs"`
	}{AppSlug: slug, Reports: []service.ReplayReport{}, Unreplayed: []map[string]string{}}
	total := 0
	var after string
	for !out.More {
		accounts, next, err := a.cfg.Reads.Accounts(after, 100)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		for _, acct := range accounts {
			more, _, err := a.runsIn(acct.ID, p, func(run engine.Run) error {
				if run.AppSlug != slug || !run.Terminal() {
					return nil
				}
				if total == maxRunsPerCall {
					out.More = true
					return errStop
				}
				total++
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
			})
			if err != nil && !errors.Is(err, errStop) {
				a.fail(w, r, err)
				return
			}
			if more || out.More {
				out.More = true
				break
			}
		}
		if next == "" || len(accounts) == 0 {
			break
		}
		after = next
	}
	writeJSON(w, http.StatusOK, out)
}

var errStop = errors.New("httpapi: enough runs for one call")
