package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/apprun/apprun/apps"
	"github.com/apprun/apprun/engine"
	"github.com/gorilla/mux"
)

// appView is an App as the catalog and its reference page show it.
type appView struct {
	Slug, Name, Description string
	Category                string
	Price                   string
	PriceReady              bool
	Timeout, Retention      string
	BrandContext            bool
	Params                  []param
	Curl                    string
}

func (s *Site) view(a *engine.App, host string) (appView, error) {
	ps, err := params(a.InputSchema)
	if err != nil {
		return appView{}, err
	}
	v := appView{Slug: a.Slug, Name: a.Name, Description: a.Description, Category: a.Category, Params: ps, BrandContext: a.AcceptsBrandContext,
		Timeout: human(a.Timeout), Retention: human(a.Retention), Price: "not priced yet"}
	if p, err := s.cfg.Reads.Price(a.Slug); err == nil && p.CreditCost > 0 && !p.Recalibrating {
		v.Price, v.PriceReady = creditsOf(p.CreditCost), true
	}
	example := s.cfg.Examples[a.Slug]
	if example == nil {
		example = map[string]any{}
		for _, p := range ps {
			if p.Required {
				example[p.Name] = "…"
			}
		}
	}
	body, _ := json.Marshal(map[string]any{"app_slug": a.Slug, "input": example})
	v.Curl = fmt.Sprintf("curl -s -X POST %s/api/v1/runs \\\n  -H \"Authorization: Bearer $API_KEY\" \\\n  -H 'Content-Type: application/json' \\\n  -d '%s'",
		host, strings.ReplaceAll(string(body), "'", `'\''`))
	return v, nil
}

// origin is the site's own address as the browser reached it.
func origin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func human(d time.Duration) string {
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%d minutes", d/time.Minute)
	default:
		return d.String()
	}
}

func (s *Site) appsPage(w http.ResponseWriter, r *http.Request) {
	cat, err := s.catalog(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "apps", "Apps", map[string]any{"Catalog": cat, "Welcome": r.URL.Query().Get("welcome") == "1",
		"FirstRun": firstRun{SignedIn: true, Credits: s.cfg.SignupCredits}})
}

func (s *Site) appPage(w http.ResponseWriter, r *http.Request) {
	app, err := s.cfg.Engine.Catalog().Lookup(mux.Vars(r)["slug"])
	if err != nil {
		s.problem(w, r, http.StatusNotFound, "There is no such App.")
		return
	}
	form := formState{}
	if f, ok := s.sessions.takeFlash(r.Context(), r); ok && f.Form != nil {
		form = formState{Values: f.Form, Errors: f.Errors, Problem: f.Problem}
	} else if from := r.URL.Query().Get("from"); from != "" {
		// Run again: the form filled in with that run's input.
		if v, ok := s.viewerOf(r); ok {
			if d, err := s.cfg.Engine.RunDetail(r.Context(), v.AccountID, from); err == nil && d.Run.AppSlug == app.Slug {
				var in map[string]any
				_ = json.Unmarshal(d.Input, &in)
				form.Values = url.Values{}
				for k, val := range in {
					form.Values.Set(k, fmt.Sprint(val))
				}
				if d.Run.BrandContextID != "" {
					form.Values.Set(brandParam, d.Run.BrandContextID)
				}
				form.From = from
			}
		}
	}
	s.showApp(w, r, app, form)
}

// formState is what the run form shows beyond the App: values sent
// before (a refused form, or a run to run again), errors by field, and a
// problem for the whole form.
type formState struct {
	Values  url.Values
	Errors  map[string]string
	Problem string
	From    string
}

// field is one control of the run form.
type field struct {
	param
	Value   string
	Checked bool
	Error   string
}

// showApp renders the reference page with its form.
func (s *Site) showApp(w http.ResponseWriter, r *http.Request, app *engine.App, form formState) {
	v, err := s.view(app, origin(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var fields []field
	for _, p := range v.Params {
		f := field{param: p, Value: p.Default, Error: form.Errors[p.Name]}
		if form.Values != nil {
			f.Value = form.Values.Get(p.Name)
			f.Checked = f.Value != "" && f.Value != "false"
		} else {
			f.Checked = p.Default == "true"
		}
		fields = append(fields, f)
	}
	data := map[string]any{"App": v, "Fields": fields, "Token": newFormToken(), "From": form.From}
	if data["Picker"], err = s.pickerFor(r, app, form); err != nil {
		s.fail(w, r, err)
		return
	}
	if raw := s.cfg.ExampleOutputs[app.Slug]; len(raw) > 0 {
		var out any
		if json.Unmarshal(raw, &out) == nil {
			data["Example"] = renderOutput(out, app.OutputSchema)
		}
	}
	if form.Problem != "" {
		s.render(w, r, http.StatusOK, "app", v.Name, data, form.Problem)
		return
	}
	s.render(w, r, http.StatusOK, "app", v.Name, data)
}

// appGroup is the Apps of one category.
type appGroup struct {
	Category string
	ID       string
	Apps     []appView
}

// groupApps groups Apps by category in the catalog's order of categories
// (apps.Categories); Apps of no category come last, under "More".
func groupApps(list []appView) []appGroup {
	var out []appGroup
	index := map[string]int{}
	order := append(append([]string{}, apps.Categories...), "")
	for _, c := range order {
		for _, a := range list {
			if a.Category != c {
				continue
			}
			i, ok := index[c]
			if !ok {
				name := c
				if name == "" {
					name = "More"
				}
				out = append(out, appGroup{Category: name, ID: "cat-" + strings.ToLower(strings.NewReplacer(" ", "-", ",", "").Replace(name))})
				i = len(out) - 1
				index[c] = i
			}
			out[i].Apps = append(out[i].Apps, a)
		}
	}
	return out
}
