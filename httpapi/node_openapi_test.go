package httpapi_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"

	. "github.com/apprun/apprun/node/nodetest"
)

func TestOpenAPIDocumentParsesAndCoversEveryRoute(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	r := h.Do("GET", "/api/v1/openapi.json", "", nil)
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
	for _, rt := range h.Node.API().Routes() {
		if strings.Contains(rt, " /api/") || strings.HasSuffix(rt, " /billing/stripe/webhook") {
			public = append(public, rt)
		}
	}
	if strings.Join(documented, "\n") != strings.Join(public, "\n") {
		t.Fatalf("the document and the router differ:\ndocumented:\n%s\nrouted:\n%s", strings.Join(documented, "\n"), strings.Join(public, "\n"))
	}
	// The App input schemas are the catalog's.
	app, err := h.Node.Engine().Catalog().Lookup("cold-email-writer")
	if err != nil {
		t.Fatal(err)
	}
	var want, got map[string]any
	_ = json.Unmarshal(app.InputSchema, &want)
	delete(want, "$schema")
	_ = json.Unmarshal(doc.Components.Schemas["Input.cold-email-writer"], &got)
	// The same schema, but each default said in words (a generator reads
	// "default" in a component as "always present").
	if strings.Contains(MustJSON(got), `"default"`) || !strings.Contains(MustJSON(got), `Default: \"Interest check\".`) {
		t.Fatalf("Input.cold-email-writer keeps a default or does not say it: %s", MustJSON(got))
	}
	if MustJSON(withoutKeys(want, "default", "description")) != MustJSON(withoutKeys(got, "default", "description")) {
		t.Fatalf("Input.cold-email-writer is not the catalog's schema:\n%s\n%s", MustJSON(got), MustJSON(want))
	}
	// Error codes are per operation.
	codes := func(op, status string) string {
		path := map[string]string{"createRun": "/api/v1/runs", "cancelRun": "/api/v1/runs/{run_no}/cancel"}[op]
		var o struct {
			Responses map[string]json.RawMessage `json:"responses"`
		}
		_ = json.Unmarshal(doc.Paths[path]["post"], &o)
		return string(o.Responses[status])
	}
	if c := codes("createRun", "409"); !strings.Contains(c, "pricing_not_ready") || strings.Contains(c, "email_taken") || strings.Contains(c, "run_already_finished") {
		t.Fatalf("createRun 409 codes: %s", c)
	}
	if c := codes("cancelRun", "409"); !strings.Contains(c, "run_already_finished") || strings.Contains(c, "pricing_not_ready") {
		t.Fatalf("cancelRun 409 codes: %s", c)
	}
	for _, st := range []string{"500", "503"} {
		for path, item := range doc.Paths {
			for method, op := range item {
				if !strings.Contains(string(op), `"`+st+`":{`) {
					t.Fatalf("%s %s does not document %s", method, path, st)
				}
			}
		}
	}
	// A client that accepts no JSON is told so.
	if r := h.Do("GET", "/api/v1/openapi.json", "", nil, "Accept", "text/html"); r.Status != 406 || r.ErrorCode(t) != "not_acceptable" {
		t.Fatalf("Accept: text/html: %d %s", r.Status, r.Body)
	}
}

// withoutKeys copies a JSON value without the given object keys.
func withoutKeys(v any, keys ...string) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range t {
			if !slices.Contains(keys, k) {
				out[k] = withoutKeys(x, keys...)
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = withoutKeys(x, keys...)
		}
		return out
	}
	return v
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

// TestOpenAPIDocumentIsStrict pins what generated clients rely on: the
// bounds the server enforces, one request schema per App chosen by
// app_slug, required members, headers, events, webhooks and metadata.
func TestOpenAPIDocumentIsStrict(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	var doc any
	if err := json.Unmarshal(h.Do("GET", "/api/v1/openapi.json", "", nil).Body, &doc); err != nil {
		t.Fatal(err)
	}
	at := func(path ...string) any {
		v := doc
		for _, p := range path {
			m, _ := v.(map[string]any)
			v = m[p]
		}
		return v
	}
	params := at("paths", "/api/v1/runs", "get", "parameters").([]any)
	var limit map[string]any
	for _, p := range params {
		if p.(map[string]any)["name"] == "limit" {
			limit = p.(map[string]any)["schema"].(map[string]any)
		}
	}
	s := func(name string, path ...string) any {
		return at(append([]string{"components", "schemas", name}, path...)...)
	}
	checks := []struct {
		what string
		got  any
		want string
	}{
		{"limit bounds", limit, `{"default":20,"maximum":100,"minimum":1,"type":"integer"}`},
		{"discriminator", s("CreateRunRequest", "discriminator", "propertyName"), `"app_slug"`},
		{"cold-email-writer's request", s("CreateRunRequest.cold-email-writer", "properties", "input"), `{"$ref":"#/components/schemas/Input.cold-email-writer"}`},
		{"app_slug is fixed per request schema", s("CreateRunRequest.cold-email-writer", "properties", "app_slug"), `{"const":"cold-email-writer"}`},
		{"brand_context_id takes null", s("CreateRunRequest.test-app", "properties", "brand_context_id", "type"), `["string","null"]`},
		{"webhook_url is http(s)", s("CreateRunRequest.test-app", "properties", "webhook_url", "pattern"), `"^[Hh][Tt][Tt][Pp][Ss]?://"`},
		{"Run's required members", s("Run.cold-email-writer", "required"), `["run_no","app_slug","status","credit_cost","created_at","stream_url","result_url"]`},
		{"Run has no other members", s("Run.cold-email-writer", "additionalProperties"), `false`},
		{"a run's App chooses its branch", s("Run", "discriminator", "mapping", "cold-email-writer"), `"#/components/schemas/Run.cold-email-writer"`},
		{"a run's output is its App's", s("Run.cold-email-writer", "properties", "output", "anyOf"), `[{"$ref":"#/components/schemas/Output.cold-email-writer"},{"type":"null"}]`},
		{"an App's output schema", s("Output.cold-email-writer", "required"), `["language","cta_goal","emails"]`},
		{"Capability's members", s("Capability", "required"), `["slug","name","description","category","credit_cost","price_ready","timeout_seconds","retention_days","retention_seconds","accepts_brand_context","input_schema","output_schema"]`},
		{"the error envelope", at("paths", "/api/v1/runs", "post", "responses", "429", "content", "application/json", "schema"), `{"$ref":"#/components/schemas/Error"}`},
		{"a 429 names its limit", s("Error", "properties", "error", "then"), `{"required":["limit"]}`},
		{"a run's webhook is a callback", at("paths", "/api/v1/runs", "post", "callbacks", "runFinished", "{$request.body#/webhook_url}", "post", "requestBody", "content", "application/json", "schema"), `{"$ref":"#/components/schemas/WebhookPayload"}`},
		{"Location on a created run", at("paths", "/api/v1/runs", "post", "responses", "201", "headers", "Location"), `{"$ref":"#/components/headers/Location"}`},
		{"Idempotent-Replayed", at("paths", "/api/v1/runs", "post", "responses", "201", "headers", "Idempotent-Replayed"), `{"$ref":"#/components/headers/Idempotent-Replayed"}`},
		{"RateLimit on a 4xx", at("paths", "/api/v1/runs", "post", "responses", "402", "headers", "RateLimit-Remaining"), `{"$ref":"#/components/headers/RateLimit-Remaining"}`},
		{"Retry-After on a 429", at("paths", "/api/v1/runs", "post", "responses", "429", "headers", "Retry-After"), `{"$ref":"#/components/headers/Retry-After"}`},
		{"WWW-Authenticate on a 401", at("paths", "/api/v1/account", "get", "responses", "401", "headers", "WWW-Authenticate"), `{"$ref":"#/components/headers/WWW-Authenticate"}`},
		{"the failed event", s("Event.failed", "required"), `["run_no","at","status","error","refund","result_url"]`},
		{"the four event kinds", at("paths", "/api/v1/runs/{run_no}/events", "get", "responses", "200", "content", "text/event-stream", "schema", "$defs"),
			`{"completed":{"$ref":"#/components/schemas/Event.completed"},"failed":{"$ref":"#/components/schemas/Event.failed"},"started":{"$ref":"#/components/schemas/Event.started"},"tool_running":{"$ref":"#/components/schemas/Event.tool_running"}}`},
		{"a cancel's code", s("RunError", "properties", "code", "enum"), `["timeout","execution_failed","interrupted","model_unavailable","model_rejected","model_reply_invalid","source_unavailable","canceled"]`},
		{"webhooks", at("webhooks", "runFinished", "post", "requestBody", "content", "application/json", "schema"), `{"$ref":"#/components/schemas/WebhookPayload"}`},
		{"servers", at("servers"), `[{"description":"The node that serves this document","url":"/"}]`},
		{"license", at("info", "license", "identifier"), `"LicenseRef-Proprietary"`},
	}
	for _, c := range checks {
		if got := MustJSON(c.got); got != c.want {
			t.Errorf("%s: %s, want %s", c.what, got, c.want)
		}
	}
}

// Two nodes of one catalog serve the same document, byte for byte: a
// client can cache and diff it, and the contract tests compile it once.
// (The catalog's map order made Run's branches differ node to node.)
func TestTheOpenAPIDocumentIsTheSameOnEveryNode(t *testing.T) {
	t.Parallel()
	a := Start(t).Do("GET", "/api/v1/openapi.json", "", nil).Body
	b := Start(t, WithLimits(NoLimits)).Do("GET", "/api/v1/openapi.json", "", nil).Body
	if !bytes.Equal(a, b) {
		t.Fatalf("two nodes of one catalog serve different documents (%d and %d bytes)", len(a), len(b))
	}
}
