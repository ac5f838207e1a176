package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/service"
	"github.com/gorilla/mux"
)

// comparePage shows two of the account's runs of one App side by side
// (GET /api/v1/runs/{run_no}/compare's comparison): ?with= names the
// other; without it, the page lists the App's recent runs to pick from.
func (s *Site) comparePage(w http.ResponseWriter, r *http.Request, v viewer) {
	runNo, with := mux.Vars(r)["run_no"], r.URL.Query().Get("with")
	run, err := s.cfg.Reads.Run(runNo)
	if err != nil || run.AccountID != v.AccountID {
		s.problem(w, r, http.StatusNotFound, "There is no such run on your account.")
		return
	}
	data := map[string]any{"Run": run, "AppName": s.appName(run.AppSlug)}
	if with == "" {
		runs, _, err := s.cfg.Reads.RunsOf(v.AccountID, 0, 100)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		var others []engine.Run
		for _, o := range runs {
			if o.AppSlug == run.AppSlug && o.RunNo != run.RunNo {
				others = append(others, o)
			}
		}
		data["Others"] = others
		s.render(w, r, http.StatusOK, "compare", "Compare "+run.RunNo, data)
		return
	}
	cmp, err := s.cfg.Engine.Compare(r.Context(), v.AccountID, runNo, with)
	var e *engine.Error
	switch {
	case errors.As(err, &e) && e.Code == engine.CodeRunNotFound:
		s.problem(w, r, http.StatusNotFound, "There is no such run on your account.")
		return
	case errors.As(err, &e) && e.Code == engine.CodeInvalidRequest:
		s.problem(w, r, http.StatusBadRequest, "Only two runs of the same App can be compared.")
		return
	case err != nil:
		s.fail(w, r, err)
		return
	}
	data["Cmp"] = cmp
	data["Facts"] = compareFacts(cmp)
	data["Input"] = s.compareRows(run.AppSlug, cmp.Input, true)
	data["Output"] = s.compareRows(run.AppSlug, cmp.Output, false)
	s.render(w, r, http.StatusOK, "compare", "Compare "+runNo+" and "+with, data)
}

// compareRow is one line of the comparison: what, each run's value, and
// whether they differ.
type compareRow struct {
	Label, A, B string
	Differs     bool
}

func compareFacts(c service.Comparison) []compareRow {
	a, b := c.Runs[0], c.Runs[1]
	tokens := func(r service.ComparedRun) string {
		if r.Tokens == nil {
			return "not reported"
		}
		return fmt.Sprintf("%d (%d in, %d out)", r.Tokens.Total, r.Tokens.Prompt, r.Tokens.Completion)
	}
	took := func(r service.ComparedRun) string {
		if r.DurationMS == nil {
			return "—"
		}
		return fmt.Sprintf("%.1f s", float64(*r.DurationMS)/1000)
	}
	status := func(r service.ComparedRun) string {
		if r.Error != nil {
			return string(r.Status) + " (" + r.Error.Code + ")"
		}
		return string(r.Status)
	}
	model := func(r service.ComparedRun) string {
		if r.Model == "" {
			return "none (built-in)"
		}
		return r.Model
	}
	credits := func(r service.ComparedRun) string {
		if r.Refunded > 0 {
			return fmt.Sprintf("%d, refunded", r.CreditCost)
		}
		return fmt.Sprint(r.CreditCost)
	}
	rows := []compareRow{
		{"Status", status(a), status(b), a.Status != b.Status},
		{"Model", model(a), model(b), !c.SameModel},
		{"App version", shortVersion(a.AppVersion), shortVersion(b.AppVersion), !c.SameVersion},
		{"Credits", credits(a), credits(b), a.CreditCost != b.CreditCost || a.Refunded != b.Refunded},
		{"Tokens", tokens(a), tokens(b), tokens(a) != tokens(b)},
		{"Time", took(a), took(b), false},
	}
	return rows
}

// shortVersion is a version hash's first 12 hex digits.
func shortVersion(v string) string {
	if len(v) > 19 {
		return v[7:19]
	}
	return v
}

// compareRows are an input's or an output's members, by their labels
// when the App's schema has them.
func (s *Site) compareRows(slug string, members []service.MemberCompare, input bool) []compareRow {
	labels := map[string]string{}
	if a, err := s.cfg.Engine.Catalog().Lookup(slug); err == nil && input {
		if ps, err := params(a.InputSchema); err == nil {
			for _, p := range ps {
				labels[p.Name] = p.Label()
			}
		}
	}
	rows := make([]compareRow, 0, len(members))
	for _, m := range members {
		label := m.Member
		if l, ok := labels[m.Member]; ok {
			label = l
		}
		rows = append(rows, compareRow{Label: label, A: shown(m.A), B: shown(m.B), Differs: !m.Same})
	}
	return rows
}

// shown is a member's value as the page shows it: text as itself,
// anything else as indented JSON, and nothing as a dash.
func shown(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "—"
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}
