package web

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/apprun/apprun/apps"
	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/httpapi"
	"github.com/gorilla/mux"
)

func (s *Site) runsPage(w http.ResponseWriter, r *http.Request, v viewer) {
	runs, _, err := s.cfg.Reads.RunsOf(v.AccountID, 0, 100)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "runs", "Runs", map[string]any{"Runs": runs})
}

func (s *Site) runPage(w http.ResponseWriter, r *http.Request, v viewer) {
	run, err := s.cfg.Reads.Run(mux.Vars(r)["run_no"])
	if errors.Is(err, engine.ErrNotFound) || (err == nil && run.AccountID != v.AccountID) {
		s.problem(w, r, http.StatusNotFound, "There is no such run on your account.")
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	data := map[string]any{"Run": run, "Terminal": run.Terminal(), "AppName": run.AppSlug}
	if a, err := s.cfg.Engine.Catalog().Lookup(run.AppSlug); err == nil {
		data["AppName"] = a.Name
	}
	if len(run.Output) > 0 {
		var out any
		_ = json.Unmarshal(run.Output, &out)
		data["Output"] = out
		var seq apps.Sequence
		if run.AppSlug == apps.ColdEmailSlug && json.Unmarshal(run.Output, &seq) == nil && len(seq.Emails) > 0 {
			data["Emails"] = seq.Emails
		}
	}
	s.render(w, r, http.StatusOK, "run", "Run "+run.RunNo, data)
}

// startRun creates a run from an App's form. The form carries an
// Idempotency-Key made when it was shown, so sending it twice (a double
// click, a reload) makes one run and one charge.
func (s *Site) startRun(w http.ResponseWriter, r *http.Request, v viewer) {
	app, err := s.cfg.Engine.Catalog().Lookup(mux.Vars(r)["slug"])
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ps, err := params(app.InputSchema)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := r.ParseForm(); err != nil {
		s.problem(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	in, err := formInput(ps, func(name string) (string, bool) {
		vals, ok := r.PostForm[name]
		if !ok || len(vals) == 0 {
			return "", false
		}
		return vals[0], true
	})
	if err != nil {
		s.showApp(w, r, app, http.StatusUnprocessableEntity, r.PostForm, err.Error())
		return
	}
	body, _ := json.Marshal(map[string]any{"app_slug": app.Slug, "input": in})
	sum := sha256.Sum256(body)
	req := engine.CreateRunRequest{AccountID: v.AccountID, KeyID: engine.SessionKeyID(v.AccountID), AppSlug: app.Slug, Input: in,
		IdempotencyKey: r.PostFormValue("idempotency_key"), BodyHash: hex.EncodeToString(sum[:])}
	if !engine.ValidIdempotencyKey(req.IdempotencyKey) {
		req.IdempotencyKey, req.BodyHash = "", ""
	}
	run, err := s.cfg.Engine.CreateRun(r.Context(), req)
	var e *engine.Error
	if errors.As(err, &e) {
		s.showApp(w, r, app, httpapi.StatusOf(e.Code), r.PostForm, e.Message)
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	_ = s.cfg.Reads.WaitFor(r.Context(), run.Seq)
	http.Redirect(w, r, "/runs/"+run.RunNo, http.StatusSeeOther)
}

func newFormToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "web-" + hex.EncodeToString(b)
}
