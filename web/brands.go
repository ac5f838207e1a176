package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"unicode/utf8"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/port"
	"github.com/gorilla/mux"
)

// Brand contexts: the list with a create form (/settings/brands), an edit
// page, a delete that asks first, and the picker on the run form of every
// App that accepts one.

// brandLabels name a brand context's fields for people.
var brandLabels = map[string]string{"name": "Name", "description": "Description", "voice": "Voice", "audience": "Audience", "website": "Website"}

// brandHints say what each field is for.
var brandHints = map[string]string{
	"description": "What the brand offers, and to whom, in a few sentences.",
	"voice":       "How it writes: for example plain, warm, no jargon.",
	"audience":    "Who reads what the runs write.",
	"website":     "For example https://acme.example",
}

// brandField is one control of the brand context form.
type brandField struct {
	Name, Label, Hint, Value, Error string
	Max                             int
	Required, Long                  bool
}

// brandForm is the form's fields with their values and errors.
func brandForm(values url.Values, errs map[string]string) []brandField {
	var out []brandField
	for _, f := range engine.BrandFields {
		out = append(out, brandField{Name: f, Label: brandLabels[f], Hint: brandHints[f], Value: values.Get(f), Error: errs[f],
			Max: engine.BrandFieldMax[f], Required: f == "name", Long: f == "description" || f == "voice" || f == "audience"})
	}
	return out
}

// brandValues are a brand context's fields as form values.
func brandValues(bc engine.BrandContext) url.Values {
	return url.Values{"name": {bc.Name}, "description": {bc.Description}, "voice": {bc.Voice}, "audience": {bc.Audience}, "website": {bc.Website}}
}

// postedBrand reads the form: its values, and the brand context they say.
func postedBrand(r *http.Request) (url.Values, engine.BrandContext) {
	form := url.Values{}
	for _, f := range engine.BrandFields {
		form.Set(f, r.PostFormValue(f))
	}
	return form, engine.BrandContext{Name: form.Get("name"), Description: form.Get("description"), Voice: form.Get("voice"),
		Audience: form.Get("audience"), Website: form.Get("website")}
}

// brandFieldErrors words a refusal's field errors beside their fields,
// naming each field by its label; ok is false for a refusal of no field.
func brandFieldErrors(err error, form url.Values) (map[string]string, bool) {
	var e *engine.Error
	if !errors.As(err, &e) || e.Code != engine.CodeInvalidInput || len(e.Fields) == 0 {
		return nil, false
	}
	errs := map[string]string{}
	for _, f := range e.Fields {
		label, ok := brandLabels[f.Field]
		if !ok {
			continue
		}
		switch f.Code {
		case "required":
			errs[f.Field] = label + " is required."
		case "maxLength":
			errs[f.Field] = fmt.Sprintf("%s is too long: use at most %s characters (this has %s).", label,
				groupThousands(int64(engine.BrandFieldMax[f.Field])), groupThousands(int64(utf8.RuneCountInString(form.Get(f.Field)))))
		case "format": // the website, the one field with a form
			errs[f.Field] = "Enter the website's full address, like https://acme.example."
		default:
			errs[f.Field] = label + " is not valid."
		}
	}
	return errs, len(errs) > 0
}

func (s *Site) brandsPage(w http.ResponseWriter, r *http.Request, v viewer) {
	list, err := s.cfg.Reads.BrandContextsOf(v.AccountID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	f, _ := s.sessions.takeFlash(r.Context(), r)
	data := map[string]any{"Brands": list, "Fields": brandForm(f.Form, f.Errors), "Notice": f.Notice}
	s.render(w, r, http.StatusOK, "brands", "Brand contexts", data, problemOf(f)...)
}

// problemOf is a flash's problem as render's optional argument.
func problemOf(f flash) []string {
	if f.Problem == "" {
		return nil
	}
	return []string{f.Problem}
}

// refusedBrand sends a refused form back to back with its values and each
// error beside its field, or shows a refusal of no field.
func (s *Site) refusedBrand(w http.ResponseWriter, r *http.Request, back string, form url.Values, err error) {
	errs, ok := brandFieldErrors(err, form)
	if !ok {
		s.brandFailed(w, r, err)
		return
	}
	s.redirectWith(w, r, back, flash{Form: form, Errors: errs,
		Problem: fmt.Sprintf("The brand context was not saved: %s to fix below.", plural(len(errs), "field", "fields"))})
}

func (s *Site) createBrand(w http.ResponseWriter, r *http.Request, v viewer) {
	form, bc := postedBrand(r)
	bc, seq, err := s.cfg.Engine.CreateBrandContext(r.Context(), v.AccountID, bc)
	if err != nil {
		s.refusedBrand(w, r, "/settings/brands#create", form, err)
		return
	}
	_ = s.cfg.Reads.WaitFor(r.Context(), seq)
	s.redirectWith(w, r, "/settings/brands", flash{Notice: fmt.Sprintf("Brand context “%s” was created: pick it on the form of any App that takes one.", bc.Name)})
}

// brandFailed shows a change that failed: one deleted meanwhile (on
// another tab, or through the API) is no brand context at all.
func (s *Site) brandFailed(w http.ResponseWriter, r *http.Request, err error) {
	var e *engine.Error
	if errors.As(err, &e) && e.Code == engine.CodeNotFound {
		s.problem(w, r, http.StatusNotFound, "There is no such brand context on your account.")
		return
	}
	s.fail(w, r, err)
}

// ownBrand is one of the viewer's brand contexts; another account's looks
// like none at all.
func (s *Site) ownBrand(w http.ResponseWriter, r *http.Request, v viewer) (engine.BrandContext, bool) {
	bc, err := s.cfg.Reads.BrandContext(r.Context(), mux.Vars(r)["brand_id"])
	if errors.Is(err, port.ErrNotFound) || (err == nil && bc.AccountID != v.AccountID) {
		s.problem(w, r, http.StatusNotFound, "There is no such brand context on your account.")
		return engine.BrandContext{}, false
	}
	if err != nil {
		s.fail(w, r, err)
		return engine.BrandContext{}, false
	}
	return bc, true
}

// brandPage is the edit page.
func (s *Site) brandPage(w http.ResponseWriter, r *http.Request, v viewer) {
	bc, ok := s.ownBrand(w, r, v)
	if !ok {
		return
	}
	values, errs := brandValues(bc), map[string]string(nil)
	f, _ := s.sessions.takeFlash(r.Context(), r)
	if f.Form != nil {
		values, errs = f.Form, f.Errors
	}
	s.render(w, r, http.StatusOK, "brand", "Edit "+bc.Name, map[string]any{"Brand": bc, "Fields": brandForm(values, errs)}, problemOf(f)...)
}

func (s *Site) updateBrand(w http.ResponseWriter, r *http.Request, v viewer) {
	bc, ok := s.ownBrand(w, r, v)
	if !ok {
		return
	}
	form, edit := postedBrand(r)
	saved, seq, err := s.cfg.Engine.UpdateBrandContext(r.Context(), v.AccountID, bc.ID, engine.EditAll(edit))
	if err != nil {
		s.refusedBrand(w, r, "/settings/brands/"+bc.ID, form, err)
		return
	}
	_ = s.cfg.Reads.WaitFor(r.Context(), seq)
	s.redirectWith(w, r, "/settings/brands", flash{Notice: fmt.Sprintf("Brand context “%s” was saved. Runs made before keep what it said then.", saved.Name)})
}

// deleteBrandPage asks before a brand context is deleted.
func (s *Site) deleteBrandPage(w http.ResponseWriter, r *http.Request, v viewer) {
	if bc, ok := s.ownBrand(w, r, v); ok {
		s.render(w, r, http.StatusOK, "brand_delete", "Delete a brand context", map[string]any{"Brand": bc})
	}
}

func (s *Site) deleteBrand(w http.ResponseWriter, r *http.Request, v viewer) {
	bc, ok := s.ownBrand(w, r, v)
	if !ok {
		return
	}
	seq, err := s.cfg.Engine.DeleteBrandContext(r.Context(), v.AccountID, bc.ID)
	if err != nil {
		s.brandFailed(w, r, err)
		return
	}
	_ = s.cfg.Reads.WaitFor(r.Context(), seq)
	s.redirectWith(w, r, "/settings/brands", flash{Notice: fmt.Sprintf("Brand context “%s” was deleted. Runs made with it keep what it said.", bc.Name)})
}

// brandPicker is the run form's choice of brand context.
type brandPicker struct {
	Brands   []engine.BrandContext
	Selected string
	Error    string
}

// pickerFor is the picker for a signed-in viewer on the form of an App
// that accepts a brand context (nil otherwise): the viewer's brand
// contexts, with the one the form had chosen.
func (s *Site) pickerFor(r *http.Request, app *engine.App, form formState) (*brandPicker, error) {
	v, ok := s.viewerOf(r)
	if !ok || !app.AcceptsBrandContext {
		return nil, nil
	}
	list, err := s.cfg.Reads.BrandContextsOf(v.AccountID)
	if err != nil {
		return nil, err
	}
	return &brandPicker{Brands: list, Selected: form.Values.Get(brandParam), Error: form.Errors[brandParam]}, nil
}

// brandNamed is the account's brand context id as a run's page names it:
// its name now, or no name when it was deleted since (one read by id, as
// ownBrand reads it).
func (s *Site) brandNamed(ctx context.Context, accountID, id string) engine.BrandContext {
	bc, err := s.cfg.Reads.BrandContext(ctx, id)
	if err != nil || bc.AccountID != accountID {
		return engine.BrandContext{ID: id}
	}
	return bc
}

// brandParam is the run form's field that names a brand context.
const brandParam = "brand_context_id"

// pickedBrand is the brand context the run form chose, if any.
func pickedBrand(r *http.Request, app *engine.App) *string {
	id := r.PostFormValue(brandParam)
	if id == "" || !app.AcceptsBrandContext {
		return nil
	}
	return &id
}
