package httpapi

import (
	"net/http"

	"github.com/apprun/apprun/engine"
	"github.com/gorilla/mux"
)

func (a *API) routeBrandContexts() {
	a.router.HandleFunc("/api/v1/brand-contexts", a.reader(a.createBrandContext)).Methods(http.MethodPost)
	a.router.HandleFunc("/api/v1/brand-contexts", a.reader(a.listBrandContexts)).Methods(http.MethodGet)
	a.router.HandleFunc("/api/v1/brand-contexts/{brand_context_id}", a.reader(a.updateBrandContext)).Methods(http.MethodPatch)
	a.router.HandleFunc("/api/v1/brand-contexts/{brand_context_id}", a.reader(a.deleteBrandContext)).Methods(http.MethodDelete)
}

// brandJSON is a brand context as the API answers it (no account id: it
// is the caller's).
func brandJSON(bc engine.BrandContext) map[string]any {
	out := map[string]any{"brand_context_id": bc.ID, "name": bc.Name, "created_at": bc.CreatedAt}
	for k, v := range map[string]string{"description": bc.Description, "voice": bc.Voice, "audience": bc.Audience, "website": bc.Website} {
		if v != "" {
			out[k] = v
		}
	}
	if !bc.UpdatedAt.IsZero() {
		out["updated_at"] = bc.UpdatedAt
	}
	return out
}

// brandFields reads a brand context request's members: each one given
// (null is none), and no other.
func brandFields(w http.ResponseWriter, r *http.Request) (map[string]*string, error) {
	obj, err := readJSONObject(w, r)
	if err != nil {
		return nil, err
	}
	if err := onlyFields(obj, engine.BrandFields...); err != nil {
		return nil, err
	}
	vals := make(map[string]*string, len(engine.BrandFields))
	for _, f := range engine.BrandFields {
		v, ok, err := stringField(obj, f)
		if err != nil {
			return nil, err
		}
		if ok {
			vals[f] = &v
		}
	}
	return vals, nil
}

// createBrandContext handles POST /api/v1/brand-contexts. It counts against
// the read limit (every call but run creation does).
func (a *API) createBrandContext(w http.ResponseWriter, r *http.Request, c caller) {
	vals, err := brandFields(w, r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	s := func(f string) string {
		if v := vals[f]; v != nil {
			return *v
		}
		return ""
	}
	bc, seq, err := a.cfg.Engine.CreateBrandContext(r.Context(), c.AccountID, engine.BrandContext{Name: s("name"),
		Description: s("description"), Voice: s("voice"), Audience: s("audience"), Website: s("website")})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.stored(r, seq, "brand context created")
	writeJSON(w, http.StatusCreated, map[string]any{"brand_context_id": bc.ID, "name": bc.Name, "created_at": bc.CreatedAt})
}

// listBrandContexts handles GET /api/v1/brand-contexts: the caller's
// brand contexts, newest first.
func (a *API) listBrandContexts(w http.ResponseWriter, r *http.Request, c caller) {
	list, err := a.cfg.Reads.BrandContextsOf(c.AccountID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := make([]map[string]any, len(list))
	for i, bc := range list {
		out[i] = brandJSON(bc)
	}
	writeList(w, out)
}

// updateBrandContext handles PATCH /api/v1/brand-contexts/{brand_context_id}:
// the members given replace theirs.
func (a *API) updateBrandContext(w http.ResponseWriter, r *http.Request, c caller) {
	vals, err := brandFields(w, r)
	if err == nil && len(vals) == 0 {
		err = errorf(engine.CodeInvalidRequest, "give at least one of name, description, voice, audience and website")
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	edit := engine.BrandEdit{Name: vals["name"], Description: vals["description"], Voice: vals["voice"], Audience: vals["audience"], Website: vals["website"]}
	bc, seq, err := a.cfg.Engine.UpdateBrandContext(r.Context(), c.AccountID, mux.Vars(r)["brand_context_id"], edit)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.stored(r, seq, "brand context updated")
	writeJSON(w, http.StatusOK, brandJSON(bc))
}

// deleteBrandContext handles DELETE /api/v1/brand-contexts/{brand_context_id}.
func (a *API) deleteBrandContext(w http.ResponseWriter, r *http.Request, c caller) {
	seq, err := a.cfg.Engine.DeleteBrandContext(r.Context(), c.AccountID, mux.Vars(r)["brand_context_id"])
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.stored(r, seq, "brand context deleted")
	w.WriteHeader(http.StatusNoContent)
}
