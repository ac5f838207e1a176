package httpapi

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/apprun/apprun/engine"
	"github.com/gorilla/mux"
)

// operation is one documented endpoint of the public API. The list is the
// OpenAPI document's source; a test checks it against the router both ways.
type operation struct {
	method, path, id, summary string
	// auth: "key" (Bearer API key), "stream" (key, ?token= or session), "none".
	auth    string
	query   []string // query parameters
	headers []string // request headers
	body    string   // request schema
	status  int      // success status
	result  string   // success schema ("" for none, "stream" for SSE)
	errors  []int
}

var operations = []operation{
	{http.MethodPost, "/api/v1/runs", "createRun", "Create a run (charges the App's price)", "key", nil, []string{"Idempotency-Key"},
		"CreateRunRequest", 201, "CreatedRun", []int{400, 401, 402, 404, 409, 422, 429, 503}},
	{http.MethodGet, "/api/v1/runs", "listRuns", "The key owner's runs, newest first", "key", []string{"limit", "cursor"}, nil,
		"", 200, "RunPage", []int{400, 401, 429}},
	{http.MethodGet, "/api/v1/runs/{run_no}", "getRun", "A run, with its output once finished", "key", nil, nil,
		"", 200, "Run", []int{401, 404, 429}},
	{http.MethodPost, "/api/v1/runs/{run_no}/cancel", "cancelRun", "Cancel a queued or running run (refunded; safe to repeat)", "key", nil, nil,
		"", 200, "Run", []int{401, 404, 409, 429}},
	{http.MethodGet, "/api/v1/runs/{run_no}/events", "streamRunEvents", "The run's events as Server-Sent Events, resumable", "stream",
		[]string{"lastEventSeq", "token"}, []string{"Last-Event-ID"}, "", 200, "stream", []int{400, 401, 404, 429}},
	{http.MethodPost, "/api/v1/runs/{run_no}/stream-token", "createStreamToken", "A short-lived token for one run's event stream", "key", nil, nil,
		"", 201, "StreamToken", []int{401, 404, 429}},
	{http.MethodGet, "/api/v1/capabilities", "listCapabilities", "The runnable Apps with prices and input schemas", "key", nil, nil,
		"", 200, "CapabilityList", []int{401, 429}},
	{http.MethodGet, "/api/v1/capabilities/{slug}", "getCapability", "One App's entry", "key", nil, nil,
		"", 200, "Capability", []int{401, 404, 429}},
	{http.MethodGet, "/api/v1/account", "getAccount", "The key owner's balance and active runs", "key", nil, nil,
		"", 200, "Account", []int{401, 429}},
	{http.MethodGet, "/api/v1/account/ledger", "getStatement", "The Credits statement, newest first", "key", []string{"limit", "cursor"}, nil,
		"", 200, "StatementPage", []int{400, 401, 429}},
	{http.MethodPost, "/api/v1/brand-contexts", "createBrandContext", "Create a brand context for runs to write for", "key", nil, nil,
		"BrandContextRequest", 201, "BrandContext", []int{400, 401, 422, 429}},
	{http.MethodGet, "/api/v1/webhooks/secret", "getWebhookSecret", "The account's webhook signing secret (Standard Webhooks)", "key", nil, nil,
		"", 200, "WebhookSecret", []int{401, 429}},
	{http.MethodGet, "/api/v1/webhooks/deliveries", "listWebhookDeliveries", "The newest 100 webhook deliveries and their state", "key", nil, nil,
		"", 200, "DeliveryList", []int{401, 429}},
	{http.MethodPost, "/api/v1/webhooks/deliveries/{run_no}/redeliver", "redeliverWebhook", "Send a finished run's webhook again", "key", nil, nil,
		"", 202, "object", []int{400, 401, 404, 429}},
	{http.MethodGet, "/api/v1/webhooks/endpoints", "listWebhookEndpoints", "The account's webhook endpoints", "key", nil, nil,
		"", 200, "WebhookEndpointList", []int{401, 429}},
	{http.MethodPost, "/api/v1/webhooks/endpoints", "addWebhookEndpoint", "Register a webhook endpoint for the account's future runs", "key", nil, nil,
		"WebhookEndpointRequest", 201, "WebhookEndpoint", []int{400, 401, 429}},
	{http.MethodDelete, "/api/v1/webhooks/endpoints/{endpoint_id}", "removeWebhookEndpoint", "Remove a webhook endpoint (runs made before keep it)", "key", nil, nil,
		"", 204, "", []int{401, 404, 429}},
	{http.MethodGet, "/api/v1/openapi.json", "getOpenAPI", "This document", "none", nil, nil, "", 200, "object", nil},
}

func (a *API) routeOpenAPI() {
	a.router.HandleFunc("/api/v1/openapi.json", a.openAPI).Methods(http.MethodGet)
}

func (a *API) openAPI(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, a.openAPIDocument())
}

type obj = map[string]any

func ref(name string) obj { return obj{"$ref": "#/components/schemas/" + name} }

// openAPIDocument is the OpenAPI 3.1 description of the public API, with
// the runnable Apps' input schemas from the catalog.
func (a *API) openAPIDocument() obj {
	apps := a.cfg.Engine.Catalog().Runnable()
	schemas := baseSchemas()
	var inputs []any
	var slugs []any
	for _, app := range apps {
		var s any
		_ = json.Unmarshal(app.InputSchema, &s)
		if m, ok := s.(map[string]any); ok {
			delete(m, "$schema") // the document's dialect is 2020-12 already
		}
		name := "Input." + app.Slug
		schemas[name] = s
		inputs = append(inputs, ref(name))
		slugs = append(slugs, app.Slug)
	}
	schemas["CreateRunRequest"] = obj{"type": "object", "required": []string{"app_slug", "input"}, "additionalProperties": false,
		"properties": obj{
			"app_slug":         obj{"type": "string", "enum": slugs},
			"input":            obj{"description": "The App's input: the schema named Input.<app_slug>", "oneOf": inputs},
			"brand_context_id": obj{"type": "string"},
			"max_credit_cost":  obj{"type": "integer", "minimum": 0, "description": "Refuse (409 pricing_not_ready) a higher price"},
			"webhook_url":      obj{"type": "string", "format": "uri", "description": "Receives the run's terminal event, signed per Standard Webhooks"},
		}}
	paths := obj{}
	for _, op := range operations {
		item, _ := paths[op.path].(obj)
		if item == nil {
			item = obj{}
			paths[op.path] = item
		}
		item[strings.ToLower(op.method)] = operationDoc(op)
	}
	codes := make([]string, 0, len(statusOf))
	for c := range statusOf {
		codes = append(codes, string(c))
	}
	sort.Strings(codes)
	schemas["Error"] = obj{"type": "object", "required": []string{"error"}, "properties": obj{"error": obj{
		"type": "object", "required": []string{"code", "message"},
		"properties": obj{"code": obj{"type": "string", "enum": codes}, "message": obj{"type": "string"}}}}}
	return obj{
		"openapi":           "3.1.0",
		"jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
		"info": obj{"title": "apprun Run API", "version": "v1",
			"description": "Create paid runs of AI Apps, follow them live over Server-Sent Events, fetch their reports."},
		"paths": paths,
		"components": obj{
			"schemas": schemas,
			"securitySchemes": obj{
				"apiKey":      obj{"type": "http", "scheme": "bearer", "description": "An API key (ak_…)"},
				"streamToken": obj{"type": "apiKey", "in": "query", "name": "token", "description": "A stream token for one run's events"},
			},
			"headers": obj{
				"RateLimit-Limit":     obj{"description": "Requests a minute the limit allows", "schema": obj{"type": "integer"}},
				"RateLimit-Remaining": obj{"description": "Requests left in the window", "schema": obj{"type": "integer"}},
				"RateLimit-Reset":     obj{"description": "Seconds until the oldest counted request leaves the window", "schema": obj{"type": "integer"}},
				"Retry-After":         obj{"description": "Seconds to wait before retrying", "schema": obj{"type": "integer"}},
			},
		},
	}
}

func operationDoc(op operation) obj {
	d := obj{"operationId": op.id, "summary": op.summary}
	switch op.auth {
	case "key":
		d["security"] = []any{obj{"apiKey": []any{}}}
	case "stream":
		d["security"] = []any{obj{"apiKey": []any{}}, obj{"streamToken": []any{}}}
	case "none":
		d["security"] = []any{}
	}
	var params []any
	for _, seg := range strings.Split(op.path, "/") {
		if strings.HasPrefix(seg, "{") {
			params = append(params, obj{"name": strings.Trim(seg, "{}"), "in": "path", "required": true, "schema": obj{"type": "string"}})
		}
	}
	for _, q := range op.query {
		schema := obj{"type": "string"}
		if q == "limit" || q == "lastEventSeq" {
			schema = obj{"type": "integer", "minimum": 0}
		}
		params = append(params, obj{"name": q, "in": "query", "required": false, "schema": schema})
	}
	for _, h := range op.headers {
		params = append(params, obj{"name": h, "in": "header", "required": false, "schema": obj{"type": "string"}})
	}
	if params != nil {
		d["parameters"] = params
	}
	if op.body != "" {
		d["requestBody"] = obj{"required": true, "content": obj{"application/json": obj{"schema": ref(op.body)}}}
	}
	limitHeaders := obj{}
	if op.auth != "none" {
		for _, h := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} {
			limitHeaders[h] = obj{"$ref": "#/components/headers/" + h}
		}
	}
	ok := obj{"description": http.StatusText(op.status), "headers": limitHeaders}
	switch op.result {
	case "stream":
		ok["content"] = obj{"text/event-stream": obj{"schema": obj{"type": "string",
			"description": "Events started, tool_running, and one of completed or failed (a cancel is failed with the error code canceled); ids are resumable"}}}
	case "object":
		ok["content"] = obj{"application/json": obj{"schema": obj{"type": "object"}}}
	case "":
	default:
		ok["content"] = obj{"application/json": obj{"schema": ref(op.result)}}
	}
	responses := obj{strconv.Itoa(op.status): ok}
	if op.result == "stream" {
		responses["204"] = obj{"description": "No Content: resumed (Last-Event-ID or lastEventSeq) at or after a finished run's last event; " +
			"the client has every event, and EventSource stops reconnecting", "headers": limitHeaders}
	}
	for _, st := range op.errors {
		resp := obj{"description": http.StatusText(st) + ": " + strings.Join(codesFor(st), ", "),
			"content": obj{"application/json": obj{"schema": ref("Error")}}}
		if st == http.StatusTooManyRequests || st == http.StatusServiceUnavailable {
			resp["headers"] = obj{"Retry-After": obj{"$ref": "#/components/headers/Retry-After"}}
		}
		responses[strconv.Itoa(st)] = resp
	}
	d["responses"] = responses
	return d
}

// codesFor lists the error codes answered with a status.
func codesFor(status int) []string {
	var out []string
	for c, st := range statusOf {
		if st == status {
			out = append(out, string(c))
		}
	}
	if status == http.StatusServiceUnavailable {
		out = append(out, string(engine.CodeInternal))
	}
	sort.Strings(out)
	return out
}

// baseSchemas are the API's own shapes.
func baseSchemas() obj {
	str, integer := obj{"type": "string"}, obj{"type": "integer"}
	stamp := obj{"type": "string", "format": "date-time"}
	run := obj{"type": "object", "required": []string{"run_no", "app_slug", "status", "credit_cost", "created_at"}, "properties": obj{
		"run_no": str, "app_slug": str,
		"status":      obj{"type": "string", "enum": []string{"queued", "running", "completed", "failed"}},
		"credit_cost": integer, "created_at": stamp, "started_at": stamp, "finished_at": stamp,
		"summary": obj{"type": "string", "description": "One sentence: what the run made, or what failed and that its Credits were refunded"},
		"output":  obj{"description": "The App's output once completed; null when the run failed (a cancel included)"}, "error": obj{"type": "object", "properties": obj{"code": str, "message": str}},
		"refunded_credits": integer, "stream_url": str, "result_url": str}}
	page := func(item string) obj {
		return obj{"type": "object", "properties": obj{"data": obj{"type": "array", "items": ref(item)}, "next_cursor": obj{"type": []string{"string", "null"}}}}
	}
	return obj{
		"Run":         run,
		"RunPage":     page("Run"),
		"CreatedRun":  obj{"type": "object", "properties": obj{"run_no": str, "credit_cost": integer, "stream_url": str, "result_url": str}},
		"StreamToken": obj{"type": "object", "properties": obj{"token": str, "expires_at": stamp, "stream_url": str}},
		"Capability": obj{"type": "object", "properties": obj{"slug": str, "name": str, "description": str,
			"credit_cost": obj{"type": []string{"integer", "null"}}, "price_ready": obj{"type": "boolean"}, "input_schema": obj{"type": "object"}}},
		"CapabilityList": page("Capability"),
		"Account":        obj{"type": "object", "properties": obj{"account_id": str, "balance": integer, "active_runs": integer}},
		"StatementLine": obj{"type": "object", "properties": obj{"type": obj{"type": "string", "enum": []string{"grant", "charge", "refund"}},
			"amount": integer, "run_no": str, "at": stamp, "balance": integer}},
		"StatementPage":          page("StatementLine"),
		"WebhookSecret":          obj{"type": "object", "properties": obj{"secret": str}},
		"WebhookEndpoint":        obj{"type": "object", "properties": obj{"endpoint_id": str, "url": str, "created_at": stamp}},
		"WebhookEndpointRequest": obj{"type": "object", "required": []string{"url"}, "properties": obj{"url": obj{"type": "string", "format": "uri"}}},
		"WebhookEndpointList":    obj{"type": "object", "properties": obj{"data": obj{"type": "array", "items": ref("WebhookEndpoint")}}},
		"Delivery": obj{"type": "object", "properties": obj{"webhook_id": str, "run_no": str, "event": str, "url": str,
			"status": obj{"type": "string", "enum": []string{"retrying", "delivered", "failed"}}, "attempts": integer,
			"last_status": integer, "last_error": str, "next_attempt_at": stamp, "updated_at": stamp}},
		"DeliveryList": obj{"type": "object", "properties": obj{"data": obj{"type": "array", "items": ref("Delivery")}}},
		"BrandContextRequest": obj{"type": "object", "required": []string{"name"}, "properties": obj{
			"name": str, "description": str, "voice": str, "audience": str, "website": str}},
		"BrandContext": obj{"type": "object", "properties": obj{"brand_context_id": str, "name": str, "description": str,
			"voice": str, "audience": str, "website": str, "created_at": stamp}},
	}
}

// Routes lists the router's routes as "METHOD /path/template", for the
// test that holds the OpenAPI document to the router.
func (a *API) Routes() []string {
	var out []string
	_ = a.router.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		tpl, err := route.GetPathTemplate()
		if err != nil {
			return nil
		}
		methods, err := route.GetMethods()
		if err != nil {
			return nil
		}
		for _, m := range methods {
			out = append(out, m+" "+tpl)
		}
		return nil
	})
	sort.Strings(out)
	return out
}
