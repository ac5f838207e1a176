package httpapi

import (
	"net/http"

	"github.com/apprun/apprun/engine"
)

func (a *API) routeBrandContexts() {
	a.router.HandleFunc("/api/v1/brand-contexts", a.reader(a.createBrandContext)).Methods(http.MethodPost)
}

// createBrandContext handles POST /api/v1/brand-contexts. It counts against
// the read limit (every call but run creation does).
func (a *API) createBrandContext(w http.ResponseWriter, r *http.Request, c caller) {
	obj, err := readJSONObject(w, r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	fields := []string{"name", "description", "voice", "audience", "website"}
	if err := onlyFields(obj, fields...); err != nil {
		a.fail(w, r, err)
		return
	}
	vals := make(map[string]string, len(fields))
	for _, f := range fields {
		v, _, err := stringField(obj, f)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		vals[f] = v
	}
	bc, seq, err := a.cfg.Engine.CreateBrandContext(r.Context(), c.AccountID, engine.BrandContext{Name: vals["name"],
		Description: vals["description"], Voice: vals["voice"], Audience: vals["audience"], Website: vals["website"]})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.stored(r, seq, "brand context created")
	writeJSON(w, http.StatusCreated, map[string]any{"brand_context_id": bc.ID, "name": bc.Name, "created_at": bc.CreatedAt})
}
