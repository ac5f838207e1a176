package web

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/apprun/apprun/apps"
	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/httpapi"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service"
	"github.com/gorilla/mux"
)

func (s *Site) appName(slug string) string {
	if a, err := s.cfg.Engine.Catalog().Lookup(slug); err == nil {
		return a.Name
	}
	return slug
}

// downloadRecord serves the run's record (GET /api/v1/runs/{run_no}/record's
// document) as a file to keep.
func (s *Site) downloadRecord(w http.ResponseWriter, r *http.Request, v viewer) {
	rec, err := s.cfg.Engine.RunRecord(r.Context(), v.AccountID, mux.Vars(r)["run_no"])
	if err != nil {
		var e *engine.Error
		if errors.As(err, &e) && e.Code == engine.CodeRunNotFound {
			s.problem(w, r, http.StatusNotFound, "There is no such run on your account.")
			return
		}
		s.fail(w, r, err)
		return
	}
	// Compact: its events are the log's bytes as stored (indenting them
	// would change the bytes a replay and a hash check read).
	body, err := json.Marshal(httpapi.RecordDocumentOf(rec))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", `attachment; filename="`+rec.Run.RunNo+`-record.json"`)
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(body)
}

// inputLine is one input of a run, as its page shows it.
type inputLine struct{ Label, Value string }

func (s *Site) runPage(w http.ResponseWriter, r *http.Request, v viewer) {
	run, err := s.cfg.Reads.Run(mux.Vars(r)["run_no"])
	if errors.Is(err, port.ErrNotFound) || (err == nil && run.AccountID != v.AccountID) {
		s.problem(w, r, http.StatusNotFound, "There is no such run on your account.")
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	f, _ := s.sessions.takeFlash(r.Context(), r)
	data := map[string]any{"Run": run, "Terminal": run.Terminal(), "Canceled": run.Canceled(), "AppName": s.appName(run.AppSlug),
		"LastSeq": run.LastSeq,
		"Notice":  f.Notice, "Timing": timing(run), "Origin": origin(r)}
	// The input and the step log live in the run's log (gone after
	// retention): the page shows them while they are there.
	if d, err := s.cfg.Engine.RunDetail(r.Context(), v.AccountID, run.RunNo); err == nil {
		data["Steps"] = d.Steps
		data["LiveSteps"], data["Now"] = liveSteps(d.Steps)
		data["WaitTool"] = engine.ToolWaitingForModel
		data["LastSeq"] = d.Run.LastSeq // the live view follows from the steps shown
		var in map[string]any
		_ = json.Unmarshal(d.Input, &in)
		data["Inputs"] = s.inputLines(run.AppSlug, in)
		req := map[string]any{"app_slug": run.AppSlug, "input": in}
		if id := run.BrandContextID; id != "" {
			req["brand_context_id"] = id
			data["Brand"] = s.brandNamed(r.Context(), v.AccountID, id)
		}
		body, _ := json.MarshalIndent(req, "", "  ")
		data["Request"] = string(body)
	}
	if len(run.Output) > 0 {
		var out any
		_ = json.Unmarshal(run.Output, &out)
		data["Output"] = out
		pretty, _ := json.MarshalIndent(out, "", "  ")
		data["OutputJSON"] = string(pretty)
		var seq apps.Sequence
		if run.AppSlug == apps.ColdEmailSlug && json.Unmarshal(run.Output, &seq) == nil && len(seq.Emails) > 0 {
			data["Emails"] = seq.Emails
		} else {
			var schema json.RawMessage
			if a, err := s.cfg.Engine.Catalog().Lookup(run.AppSlug); err == nil {
				schema = a.OutputSchema
			}
			data["Rendered"] = renderOutput(out, schema)
		}
	}
	if run.Terminal() && run.Error != nil && !run.Canceled() {
		data["Failure"] = failureWords(run.Error)
	}
	if u := run.Usage; u != nil {
		data["Usage"] = usageWords(u)
	}
	s.render(w, r, http.StatusOK, "run", run.RunNo+" · "+s.appName(run.AppSlug), data)
}

// inputLines lists a run's input in the order of the App's form.
func (s *Site) inputLines(slug string, in map[string]any) []inputLine {
	var out []inputLine
	seen := map[string]bool{}
	if a, err := s.cfg.Engine.Catalog().Lookup(slug); err == nil {
		if ps, err := params(a.InputSchema); err == nil {
			for _, p := range ps {
				if v, ok := in[p.Name]; ok {
					out = append(out, inputLine{p.Label(), inputText(v)})
					seen[p.Name] = true
				}
			}
		}
	}
	for k, v := range in {
		if !seen[k] {
			out = append(out, inputLine{words(k), inputText(v)})
		}
	}
	return out
}

// runTiming is how long a run waited, ran, and took in all.
type runTiming struct{ Queued, Ran, Total string }

func timing(run engine.Run) runTiming {
	var t runTiming
	if run.StartedAt != nil {
		t.Queued = short(run.StartedAt.Sub(run.CreatedAt))
		if run.FinishedAt != nil {
			t.Ran = short(run.FinishedAt.Sub(*run.StartedAt))
		}
	}
	if run.FinishedAt != nil {
		t.Total = short(run.FinishedAt.Sub(run.CreatedAt))
	}
	return t
}

func short(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	default:
		return d.Truncate(time.Second).String()
	}
}

// cancelRun cancels a queued or running run from its page, then shows the
// page again with what happened (post-redirect-get).
// cancelPage asks once before a run is canceled: what stops and what
// comes back.
func (s *Site) cancelPage(w http.ResponseWriter, r *http.Request, v viewer) {
	runNo := mux.Vars(r)["run_no"]
	d, err := s.cfg.Engine.RunDetail(r.Context(), v.AccountID, runNo)
	var e *engine.Error
	switch {
	case errors.As(err, &e) && e.Code == engine.CodeRunNotFound:
		s.problem(w, r, http.StatusNotFound, "There is no such run on your account.")
		return
	case err != nil:
		s.fail(w, r, err)
		return
	case d.Run.Terminal():
		s.redirectWith(w, r, "/runs/"+runNo, flash{Notice: "The run has already finished, so there is nothing to cancel."})
		return
	}
	s.render(w, r, http.StatusOK, "cancel", "Cancel a run", map[string]any{"Run": d.Run, "AppName": s.appName(d.Run.AppSlug)})
}

// cancelRun cancels a run, once asked (cancelPage's form says
// confirm=yes; a post without it is shown the question).
func (s *Site) cancelRun(w http.ResponseWriter, r *http.Request, v viewer) {
	runNo := mux.Vars(r)["run_no"]
	if r.PostFormValue("confirm") != "yes" {
		http.Redirect(w, r, "/runs/"+url.PathEscape(runNo)+"/cancel", http.StatusSeeOther)
		return
	}
	_, seq, err := s.cfg.Engine.CancelRun(r.Context(), v.AccountID, runNo)
	var e *engine.Error
	switch {
	case errors.As(err, &e) && e.Code == engine.CodeRunFinished:
		s.redirectWith(w, r, "/runs/"+runNo, flash{Notice: "The run had already finished, so there was nothing to cancel."})
		return
	case err != nil:
		s.fail(w, r, err)
		return
	}
	_ = s.cfg.Reads.WaitFor(r.Context(), seq)
	// The run's page says what happened: canceled, and the refund.
	http.Redirect(w, r, "/runs/"+runNo, http.StatusSeeOther)
}

// startRun creates a run from an App's form. The form carries an
// Idempotency-Key made when it was shown, so sending it twice (a double
// click, a reload) makes one run and one charge. A refused form goes back
// to the App's page with its values and each error beside its field
// (post-redirect-get: a reload there posts nothing).
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
	back := "/apps/" + app.Slug + "#run-form"
	form := url.Values{}
	errs := map[string]string{}
	for _, p := range ps {
		if vals, ok := r.PostForm[p.Name]; ok && len(vals) > 0 {
			form.Set(p.Name, vals[0])
		}
		if msg := checkField(p, form.Get(p.Name)); msg != "" {
			errs[p.Name] = msg
		}
	}
	brand := pickedBrand(r, app)
	if brand != nil {
		form.Set(brandParam, *brand)
	}
	refuse := func(problem string) {
		s.redirectWith(w, r, back, flash{Form: form, Errors: errs, Problem: problem})
	}
	if len(errs) > 0 {
		refuse(fmt.Sprintf("The run was not started: %s to fix below. Nothing was charged.", plural(len(errs), "field", "fields")))
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
		refuse(err.Error())
		return
	}
	// The form's token is its Idempotency-Key: a form sent twice makes one
	// run. One that is not a key (altered) is refused, as the API refuses it.
	req := service.CreateRunRequest{AccountID: v.AccountID, KeyID: service.SessionKeyID(v.AccountID), AppSlug: app.Slug, Input: in,
		IdempotencyKey: r.PostFormValue("idempotency_key"), BrandContextID: brand}
	run, err := s.cfg.Engine.CreateRun(r.Context(), req)
	var e *engine.Error
	if errors.As(err, &e) {
		msg := "The run was not started: " + strings.TrimSuffix(e.Message, ".") + ". Nothing was charged."
		switch e.Code {
		case engine.CodeInvalidInput:
			for _, f := range e.Fields {
				if name := f.Name(); name != "" && hasParam(ps, name) {
					errs[name] = f.Message
				}
			}
			if len(errs) > 0 {
				msg = fmt.Sprintf("The run was not started: %s to fix below. Nothing was charged.", plural(len(errs), "field", "fields"))
			}
		case engine.CodeIdempotencyReused:
			msg = "The run was not started: this form was already sent, with other values. The form below is a fresh one: send it to start a new run. Nothing more was charged."
		case engine.CodeIdempotencyBusy:
			msg = "This form was just sent and its run is being started. Look under Runs in a moment; nothing was charged twice."
		case engine.CodeInvalidRequest:
			if len(e.Fields) == 1 && e.Fields[0].Field == "idempotency_key" { // the form's hidden token was altered
				msg = "The run was not started: this form was changed in a way we cannot read. The form below is a fresh one: send it again. Nothing was charged."
			}
		case engine.CodeInvalidBrandContext:
			errs[brandParam] = "This brand context is not on your account (it may have been deleted): choose another, or None."
			msg = "The run was not started: 1 field to fix below. Nothing was charged."
		case engine.CodeInsufficientCredits:
			if s.selling() {
				msg += " See your balance and buy more under Credits."
			} else {
				msg += " See your balance under Credits. Credits are added by whoever runs this service for you: ask them for more."
			}
		}
		refuse(msg)
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// The run's page reads it through Reads, which waits for the create.
	http.Redirect(w, r, "/runs/"+run.RunNo, http.StatusSeeOther)
}

func newFormToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "web-" + hex.EncodeToString(b)
}
