package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/port"
	"github.com/gorilla/mux"
)

func (a *API) routeCapabilities() {
	a.router.HandleFunc("/api/v1/capabilities", a.reader(a.listCapabilities)).Methods(http.MethodGet)
	a.router.HandleFunc("/api/v1/capabilities/{slug}", a.reader(a.getCapability)).Methods(http.MethodGet)
}

// capability is one entry of the capability list. credit_cost is null while
// the App has no price or is being recalibrated (price_ready false).
type capability struct {
	Slug           string `json:"slug"`
	Name           string `json:"name"`
	Description    string `json:"description"`
	Category       string `json:"category"`
	CreditCost     *int64 `json:"credit_cost"`
	PriceReady     bool   `json:"price_ready"`
	TimeoutSeconds int    `json:"timeout_seconds"`
	RetentionDays  int    `json:"retention_days"`
	// RetentionSeconds is the retention exactly: retention_days rounds a
	// retention under a day down to 0 (issue 47).
	RetentionSeconds    int64           `json:"retention_seconds"`
	AcceptsBrandContext bool            `json:"accepts_brand_context"`
	InputSchema         json.RawMessage `json:"input_schema"`
	// OutputSchema is the schema of a completed run's output, its members
	// in the order the output has them ({} for an App that declares
	// none: test fixtures).
	OutputSchema json.RawMessage `json:"output_schema"`
}

func (a *API) capabilityOf(app *engine.App) (capability, error) {
	c := capability{Slug: app.Slug, Name: app.Name, Description: app.Description, Category: app.Category,
		TimeoutSeconds: int(app.Timeout.Seconds()), RetentionDays: int(app.Retention.Hours() / 24),
		RetentionSeconds:    int64(app.Retention.Seconds()),
		AcceptsBrandContext: app.AcceptsBrandContext, InputSchema: app.InputSchema, OutputSchema: app.OutputSchema}
	if len(c.OutputSchema) == 0 {
		c.OutputSchema = json.RawMessage(`{}`)
	}
	p, err := a.cfg.Reads.Price(app.Slug)
	if err != nil && !errors.Is(err, port.ErrNotFound) {
		return c, err
	}
	if err == nil && !p.Recalibrating {
		cost := p.CreditCost
		c.CreditCost, c.PriceReady = &cost, true
	}
	return c, nil
}

// listCapabilities handles GET /api/v1/capabilities: runnable Apps with
// their current prices.
func (a *API) listCapabilities(w http.ResponseWriter, r *http.Request, _ caller) {
	data := []capability{}
	for _, app := range a.cfg.Engine.Catalog().Runnable() {
		c, err := a.capabilityOf(app)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		data = append(data, c)
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data})
}

// getCapability handles GET /api/v1/capabilities/{slug}.
func (a *API) getCapability(w http.ResponseWriter, r *http.Request, _ caller) {
	app, err := a.cfg.Engine.Catalog().Lookup(mux.Vars(r)["slug"])
	if err != nil {
		a.fail(w, r, err)
		return
	}
	c, err := a.capabilityOf(app)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}
