package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/apprun/apprun/apps"
	. "github.com/apprun/apprun/node/nodetest"
	"github.com/kaptinlin/jsonschema"
)

// Every shipped App's capability carries its output schema, and each of
// the App's examples is valid against the schema as served.
func TestEveryCapabilityHasAnOutputSchemaItsExamplesMeet(t *testing.T) {
	t.Parallel()
	h := Start(t)
	a := h.Account(0)
	defs, err := apps.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range defs {
		r := h.Do("GET", "/api/v1/capabilities/"+d.Slug, a.Key, nil)
		if r.Status == 404 {
			continue // not runnable here (oss-growth without GitHub)
		}
		var c struct {
			OutputSchema json.RawMessage `json:"output_schema"`
		}
		if err := json.Unmarshal(r.Body, &c); err != nil || r.Status != 200 {
			t.Fatalf("%s: %d %s", d.Slug, r.Status, r.Body)
		}
		schema, err := jsonschema.NewCompiler().Compile(c.OutputSchema)
		if err != nil || !strings.Contains(string(c.OutputSchema), `"properties"`) {
			t.Fatalf("%s: output_schema %s: %v", d.Slug, c.OutputSchema, err)
		}
		for i, ex := range d.Examples {
			var out any
			_ = json.Unmarshal(ex.Output, &out)
			if res := schema.Validate(out); !res.IsValid() {
				t.Errorf("%s: example %d does not meet the served output_schema: %v", d.Slug, i, res.Errors)
			}
		}
	}
}

// A run's output has its members in the order the App's schema declares
// them (cold-email-writer: language, cta_goal, emails), on every surface
// that returns it: the run, the stream's completed event, the run list.
func TestOutputMembersComeInTheSchemasOrder(t *testing.T) {
	t.Parallel()
	h := Start(t)
	a := h.Account(100)
	runNo := h.Create(a, ColdEmailRun())
	h.Collect(a, runNo)
	const want = `"output":{"language":`
	for what, body := range map[string][]byte{
		"the run":             h.Do("GET", "/api/v1/runs/"+runNo, a.Key, nil).Body,
		"the completed event": h.Do("GET", "/api/v1/runs/"+runNo+"/events", a.Key, nil).Body,
		"the run list":        h.Do("GET", "/api/v1/runs", a.Key, nil).Body,
	} {
		if !strings.Contains(string(body), want) {
			i := strings.Index(string(body), `"output":`)
			t.Errorf("%s: output starts %.60q, want %s…", what, string(body)[max(i, 0):], want)
		}
	}
}
