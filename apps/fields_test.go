package apps_test

import (
	"encoding/json"
	"testing"

	"github.com/apprun/apprun/apps"
	"github.com/apprun/apprun/inputschema"
)

// Every input of every shipped App has a human title and a description,
// and every free-text one an example (the website's label, hint and
// placeholder), which its own schema accepts.
func TestEveryInputHasATitleADescriptionAndAnExample(t *testing.T) {
	defs, err := apps.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range defs {
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(d.InputSchema, &s); err != nil {
			t.Fatal(err)
		}
		for name, raw := range s.Properties {
			var p struct {
				Title, Description, Type string
				Enum                     []any
				Examples                 []any
			}
			_ = json.Unmarshal(raw, &p)
			if p.Title == "" || p.Description == "" {
				t.Errorf("%s.%s: title %q, description %q", d.Slug, name, p.Title, p.Description)
			}
			if p.Type != "string" || len(p.Enum) > 0 {
				continue
			}
			if len(p.Examples) == 0 {
				t.Errorf("%s.%s: a free-text input with no example", d.Slug, name)
				continue
			}
			schema, err := inputschema.Compile(json.RawMessage(`{"type":"object","properties":{"v":` + string(raw) + `}}`))
			if err != nil {
				t.Fatalf("%s.%s: %v", d.Slug, name, err)
			}
			if _, why := schema.Check(map[string]any{"v": p.Examples[0]}); len(why) > 0 {
				t.Errorf("%s.%s: its example is refused: %s", d.Slug, name, why)
			}
		}
	}
}
