package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/gorilla/mux"
)

// appView is an App as the catalog and its reference page show it.
type appView struct {
	Slug, Name, Description string
	Price                   string
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
	v := appView{Slug: a.Slug, Name: a.Name, Description: a.Description, Params: ps, BrandContext: a.AcceptsBrandContext,
		Timeout: human(a.Timeout), Retention: human(a.Retention), Price: "not priced yet"}
	if p, err := s.cfg.Reads.Price(a.Slug); err == nil && p.CreditCost > 0 && !p.Recalibrating {
		v.Price = fmt.Sprintf("%s Credits", groupThousands(p.CreditCost))
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
	v.Curl = fmt.Sprintf("curl -s -X POST %s/api/v1/runs \\\n  -H \"Authorization: Bearer $APPRUN_API_KEY\" \\\n  -H 'Content-Type: application/json' \\\n  -d '%s'",
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
	var list []appView
	for _, a := range s.cfg.Engine.Catalog().Runnable() {
		v, err := s.view(a, origin(r))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		list = append(list, v)
	}
	s.render(w, r, http.StatusOK, "apps", "Apps", map[string]any{"Apps": list})
}

func (s *Site) appPage(w http.ResponseWriter, r *http.Request) {
	app, err := s.cfg.Engine.Catalog().Lookup(mux.Vars(r)["slug"])
	if err != nil {
		s.problem(w, r, http.StatusNotFound, "There is no such App.")
		return
	}
	s.showApp(w, r, app, http.StatusOK, nil, "")
}

// showApp renders the reference page with its form, filled with values
// when a submission is shown again.
func (s *Site) showApp(w http.ResponseWriter, r *http.Request, app *engine.App, status int, values url.Values, problem string) {
	v, err := s.view(app, origin(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	type field struct {
		param
		Value   string
		Checked bool
	}
	var fields []field
	for _, p := range v.Params {
		f := field{param: p, Value: p.Default}
		if values != nil {
			f.Value = values.Get(p.Name)
			f.Checked = values.Get(p.Name) != ""
		} else {
			f.Checked = p.Default == "true"
		}
		fields = append(fields, f)
	}
	data := map[string]any{"App": v, "Fields": fields, "Token": newFormToken()}
	if problem != "" {
		s.render(w, r, status, "app", v.Name, data, problem)
		return
	}
	s.render(w, r, status, "app", v.Name, data)
}
