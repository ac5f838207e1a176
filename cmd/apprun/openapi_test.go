package main

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
)

func TestOpenAPIDocumentParsesAndCoversEveryRoute(t *testing.T) {
	h := start(t, withLimits(noLimits))
	r := h.do("GET", "/api/v1/openapi.json", "", nil)
	if r.Status != 200 {
		t.Fatalf("openapi.json: %d %s", r.Status, r.Body)
	}
	var doc struct {
		OpenAPI    string                                `json:"openapi"`
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(r.Body, &doc); err != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("not an OpenAPI 3.1 document: %v %q", err, doc.OpenAPI)
	}
	var documented []string
	for path, item := range doc.Paths {
		for method, op := range item {
			documented = append(documented, strings.ToUpper(method)+" "+path)
			var o struct {
				OperationID string                     `json:"operationId"`
				Responses   map[string]json.RawMessage `json:"responses"`
			}
			if err := json.Unmarshal(op, &o); err != nil || o.OperationID == "" || len(o.Responses) == 0 {
				t.Fatalf("%s %s: no operationId or responses", method, path)
			}
			for _, resp := range o.Responses {
				for _, target := range refs(resp) {
					if _, ok := doc.Components.Schemas[strings.TrimPrefix(target, "#/components/schemas/")]; strings.HasPrefix(target, "#/components/schemas/") && !ok {
						t.Fatalf("%s %s refers to a missing schema %s", method, path, target)
					}
				}
			}
		}
	}
	sort.Strings(documented)
	var public []string
	for _, rt := range h.node.API().Routes() {
		if strings.Contains(rt, " /api/") {
			public = append(public, rt)
		}
	}
	if strings.Join(documented, "\n") != strings.Join(public, "\n") {
		t.Fatalf("the document and the router differ:\ndocumented:\n%s\nrouted:\n%s", strings.Join(documented, "\n"), strings.Join(public, "\n"))
	}
	// The App input schemas are the catalog's.
	app, err := h.node.Engine().Catalog().Lookup("cold-email-writer")
	if err != nil {
		t.Fatal(err)
	}
	var want, got map[string]any
	_ = json.Unmarshal(app.InputSchema, &want)
	delete(want, "$schema")
	_ = json.Unmarshal(doc.Components.Schemas["Input.cold-email-writer"], &got)
	if mustJSON(want) != mustJSON(got) {
		t.Fatalf("Input.cold-email-writer is not the catalog's schema:\n%s\n%s", mustJSON(got), mustJSON(want))
	}
	for _, code := range []string{"insufficient_credits", "rate_limited", "run_already_finished", "invalid_input"} {
		if !strings.Contains(string(doc.Components.Schemas["Error"]), `"`+code+`"`) {
			t.Fatalf("the Error schema lacks the code %s", code)
		}
	}
}

// refs lists every $ref in a JSON value.
func refs(raw json.RawMessage) []string {
	var v any
	_ = json.Unmarshal(raw, &v)
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, x := range t {
				if s, ok := x.(string); ok && k == "$ref" {
					out = append(out, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range t {
				walk(x)
			}
		}
	}
	walk(v)
	return out
}
