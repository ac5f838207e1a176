package httpapi

import (
	"encoding/json"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/service"
	"github.com/gorilla/mux"
)

// operation is one documented endpoint of the public API. The list is the
// OpenAPI document's source; a test checks it against the router both ways,
// and the contract test (httpapi/contract) checks every answer the test
// suite gets against the document.
type operation struct {
	method, path, id, summary string
	// auth: "key" (Bearer API key), "stream" (key, ?token= or session), "none".
	auth    string
	query   []string // query parameters
	headers []string // request headers
	body    string   // request schema
	status  int      // success status
	result  string   // success schema ("" for none, "stream" for SSE)
	// codes are the error codes the operation answers; the statuses come
	// from the error table (StatusOf). Every operation also answers 500 and 503, and 429
	// rate_limited to a caller past its refused requests' budget
	// (refusals.go): every list holds cRate.
	codes []engine.Code
}

const (
	cBad       = engine.CodeInvalidRequest
	cAuth      = engine.CodeUnauthorized
	cRate      = engine.CodeRateLimited
	cRunNF     = engine.CodeRunNotFound
	cInput     = engine.CodeInvalidInput
	cNotFound  = engine.CodeNotFound
	cAppNF     = engine.CodeAppNotFound
	cFinished  = engine.CodeRunFinished
	cBrand     = engine.CodeInvalidBrandContext
	cConcLimit = engine.CodeConcurrencyLimit
)

var operations = []operation{
	{http.MethodPost, "/api/v1/runs", "createRun", "Create a run (charges the App's price)", "key", nil, []string{"Idempotency-Key"},
		"CreateRunRequest", 201, "CreatedRun", []engine.Code{cBad, cAuth, engine.CodeInsufficientCredits, cAppNF,
			engine.CodePricingNotReady, engine.CodeIdempotencyBusy, engine.CodeIdempotencyReused, cInput, cBrand, cRate, cConcLimit}},
	{http.MethodGet, "/api/v1/runs", "listRuns", "The key owner's runs, newest first", "key", []string{"limit", "cursor"}, nil,
		"", 200, "RunPage", []engine.Code{cBad, cAuth, cRate}},
	{http.MethodGet, "/api/v1/runs/{run_no}", "getRun", "A run, with its output once finished", "key", nil, nil,
		"", 200, "Run", []engine.Code{cAuth, cRunNF, cRate}},
	{http.MethodPost, "/api/v1/runs/{run_no}/cancel", "cancelRun", "Cancel a queued or running run (it fails with the code canceled and is refunded; safe to repeat)", "key", nil, nil,
		"", 200, "Run", []engine.Code{cAuth, cRunNF, cFinished, cRate}},
	{http.MethodGet, "/api/v1/runs/{run_no}/record", "getRunRecord", "The run's record: its input, App version and price, each model exchange and source read, every event of its log with its sequence, and its ledger lines (docs/api.md, Run records)", "key", nil, nil,
		"", 200, "RunRecord", []engine.Code{cAuth, cRunNF, cRate}},
	{http.MethodPost, "/api/v1/runs/{run_no}/rerun", "rerunRun", "Run a run again as a new run, charged at today's price, with another model the operator offers or input members changed", "key", nil, []string{"Idempotency-Key"},
		"RerunRequest", 201, "CreatedRerun", []engine.Code{cBad, cAuth, cRunNF, engine.CodeInsufficientCredits, cAppNF,
			engine.CodePricingNotReady, engine.CodeIdempotencyBusy, engine.CodeIdempotencyReused, cInput, cBrand, cRate, cConcLimit}},
	{http.MethodGet, "/api/v1/runs/{run_no}/compare", "compareRuns", "Two runs of one App side by side: input, model, output member by member, tokens, time and Credits", "key", []string{"with"}, nil,
		"", 200, "RunComparison", []engine.Code{cBad, cAuth, cRunNF, cRate}},
	{http.MethodGet, "/api/v1/runs/{run_no}/events", "streamRunEvents", "The run's events as Server-Sent Events, resumable", "stream",
		[]string{"lastEventSeq", "token"}, []string{"Last-Event-ID"}, "", 200, "stream", []engine.Code{cBad, cAuth, cRunNF, cRate, cConcLimit}},
	{http.MethodPost, "/api/v1/runs/{run_no}/stream-token", "createStreamToken", "A short-lived token for one run's event stream", "key", nil, nil,
		"", 201, "StreamToken", []engine.Code{cAuth, cRunNF, cRate}},
	{http.MethodGet, "/api/v1/capabilities", "listCapabilities", "The runnable Apps with prices and input schemas", "key", nil, nil,
		"", 200, "CapabilityList", []engine.Code{cAuth, cRate}},
	{http.MethodGet, "/api/v1/capabilities/{slug}", "getCapability", "One App's entry", "key", nil, nil,
		"", 200, "Capability", []engine.Code{cAuth, cAppNF, cRate}},
	{http.MethodGet, "/api/v1/account", "getAccount", "The key owner's balance and active runs", "key", nil, nil,
		"", 200, "Account", []engine.Code{cAuth, cRate}},
	{http.MethodGet, "/api/v1/account/ledger", "getStatement", "The Credits statement over a period: opening and closing balance, totals by type and by App, and the lines, newest first (format=csv: every line, oldest first, between an opening and a closing row)", "key", []string{"limit", "cursor", "from", "to", "format"}, nil,
		"", 200, "StatementPage", []engine.Code{cBad, cAuth, cRate}},
	{http.MethodGet, "/api/v1/account/ledger/checkpoint", "getLedgerCheckpoint", "The account's signed checkpoint: its newest ledger event's sequence, hash and balance, to keep; `apprun audit --checkpoint` proves the log still holds it (docs/guarantees.md)", "key", nil, nil,
		"", 200, "Checkpoint", []engine.Code{cAuth, cRate}},
	{http.MethodPost, "/api/v1/brand-contexts", "createBrandContext", "Create a brand context for runs to write for", "key", nil, nil,
		"BrandContextRequest", 201, "BrandContext", []engine.Code{cBad, cAuth, cInput, cRate}},
	{http.MethodGet, "/api/v1/brand-contexts", "listBrandContexts", "The key owner's brand contexts, newest first", "key", nil, nil,
		"", 200, "BrandContextList", []engine.Code{cAuth, cRate}},
	{http.MethodPatch, "/api/v1/brand-contexts/{brand_context_id}", "updateBrandContext", "Change a brand context: the members given replace theirs (runs made before keep the version they used)", "key", nil, nil,
		"BrandContextEdit", 200, "BrandContext", []engine.Code{cBad, cAuth, cNotFound, cInput, cRate}},
	{http.MethodDelete, "/api/v1/brand-contexts/{brand_context_id}", "deleteBrandContext", "Delete a brand context: no run can name it any more; runs made with it keep their copy", "key", nil, nil,
		"", 204, "", []engine.Code{cAuth, cNotFound, cRate}},
	{http.MethodGet, "/api/v1/webhooks/secret", "getWebhookSecret", "The account's webhook signing secret (Standard Webhooks)", "key", nil, nil,
		"", 200, "WebhookSecret", []engine.Code{cAuth, cRate}},
	{http.MethodGet, "/api/v1/webhooks/deliveries", "listWebhookDeliveries", "The newest 100 webhook deliveries and their state", "key", nil, nil,
		"", 200, "DeliveryList", []engine.Code{cAuth, cRate}},
	{http.MethodPost, "/api/v1/webhooks/deliveries/{run_no}/redeliver", "redeliverWebhook", "Send a finished run's webhook again", "key", nil, nil,
		"", 202, "Redelivery", []engine.Code{cBad, cAuth, cRunNF, cRate}},
	{http.MethodGet, "/api/v1/webhooks/endpoints", "listWebhookEndpoints", "The account's webhook endpoints", "key", nil, nil,
		"", 200, "WebhookEndpointList", []engine.Code{cAuth, cRate}},
	{http.MethodPost, "/api/v1/webhooks/endpoints", "addWebhookEndpoint", "Register a webhook endpoint for the account's future runs", "key", nil, nil,
		"WebhookEndpointRequest", 201, "WebhookEndpoint", []engine.Code{cBad, cAuth, cRate}},
	{http.MethodDelete, "/api/v1/webhooks/endpoints/{endpoint_id}", "removeWebhookEndpoint", "Remove a webhook endpoint (runs made before keep it)", "key", nil, nil,
		"", 204, "", []engine.Code{cAuth, cNotFound, cRate}},
	{http.MethodGet, "/api/v1/billing/packs", "listCreditPacks", "The credit packs on sale (none, and how Credits are added, when this server sells none)", "key", nil, nil,
		"", 200, "CreditPackList", []engine.Code{cAuth, cRate}},
	{http.MethodPost, "/api/v1/billing/checkout", "createCheckout", "A Stripe Checkout Session for one pack (the account's open one for the pack again, if any; at most 10 new ones an hour per account): send the buyer to its url; the Credits come with Stripe's webhook", "key", nil, nil,
		"CheckoutRequest", 201, "CheckoutSession", []engine.Code{cBad, cAuth, cInput, engine.CodeCreditsNotSold, engine.CodePaymentProvider, cRate}},
	{http.MethodPost, "/billing/stripe/webhook", "stripeWebhook", "Stripe's events (Stripe-Signature verified): a paid checkout grants its pack once, a refund revokes its share", "none", nil, []string{"Stripe-Signature"},
		"StripeEvent", 200, "StripeReceipt", []engine.Code{cBad, engine.CodeInvalidSignature, engine.CodeCreditsNotSold, cRate}},
	{http.MethodGet, "/api/v1/ledger/public-key", "getLedgerPublicKey", "The Ed25519 key that verifies the ledger's signatures (docs/guarantees.md)", "none", nil, nil, "", 200, "LedgerPublicKey",
		[]engine.Code{cNotFound, cRate}},
	{http.MethodGet, "/api/v1/openapi.json", "getOpenAPI", "This document", "none", nil, nil, "", 200, "OpenAPIDocument",
		[]engine.Code{engine.CodeNotAcceptable, cRate}},
}

func (a *API) routeOpenAPI() {
	a.router.HandleFunc("/api/v1/openapi.json", a.openAPI).Methods(http.MethodGet)
}

// openAPI serves the document, or 406 to a client that accepts no JSON.
func (a *API) openAPI(w http.ResponseWriter, r *http.Request) {
	if !acceptsJSON(r.Header.Values("Accept")) {
		writeError(w, r, a.cfg.Logger, errorf(engine.CodeNotAcceptable, "this document is application/json, which the Accept header refuses"))
		return
	}
	a.docOnce.Do(func() { a.doc, _ = json.Marshal(a.openAPIDocument()) })
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(a.doc)
}

// acceptsJSON reports whether Accept headers allow application/json: no
// header, or a media range that matches it with a q above 0.
func acceptsJSON(accept []string) bool {
	if len(accept) == 0 {
		return true
	}
	for _, h := range accept {
		for _, item := range strings.Split(h, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(item))
			if err != nil {
				continue
			}
			if q, err := strconv.ParseFloat(params["q"], 64); err == nil && q <= 0 {
				continue
			}
			switch mt {
			case "*/*", "application/*", "application/json", "application/openapi+json", "application/vnd.oai.openapi+json":
				return true
			}
		}
	}
	return false
}

type obj = map[string]any

func ref(name string) obj { return obj{"$ref": "#/components/schemas/" + name} }

// openAPIDocument is the OpenAPI 3.1 description of the public API, with
// one request schema per runnable App (its input schema from the catalog),
// chosen by app_slug.
func (a *API) openAPIDocument() obj {
	schemas := baseSchemas()
	var branches []any
	mapping := obj{}
	for _, app := range a.cfg.Engine.Catalog().Runnable() {
		var s any
		_ = json.Unmarshal(app.InputSchema, &s)
		if m, ok := s.(map[string]any); ok {
			delete(m, "$schema") // the document's dialect is 2020-12 already
		}
		schemas["Input."+app.Slug] = defaultsInWords(s)
		name := "CreateRunRequest." + app.Slug
		schemas[name] = createRunSchema(app)
		branches = append(branches, ref(name))
		mapping[app.Slug] = "#/components/schemas/" + name
	}
	schemas["Error"] = errorEnvelope()
	typedRuns(schemas, a.cfg.Engine.Catalog().All())
	schemas["CreateRunRequest"] = obj{"description": "A run of one App: the member app_slug chooses the schema of input",
		"oneOf": branches, "discriminator": obj{"propertyName": "app_slug", "mapping": mapping}}
	paths := obj{}
	for _, op := range operations {
		item, _ := paths[op.path].(obj)
		if item == nil {
			item = obj{}
			paths[op.path] = item
		}
		item[strings.ToLower(op.method)] = operationDoc(op)
	}
	return obj{
		"openapi":           "3.1.0",
		"jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
		"info": obj{"title": "apprun Run API", "version": "v1",
			"description": "Create paid runs of AI Apps, follow them live over Server-Sent Events, fetch their reports.",
			"license":     obj{"name": "Proprietary: the operator's terms of service", "identifier": "LicenseRef-Proprietary"}},
		"servers":  []any{obj{"url": "/", "description": "The node that serves this document"}},
		"paths":    paths,
		"webhooks": webhooksDoc(),
		"components": obj{
			"schemas": schemas,
			"securitySchemes": obj{
				"apiKey":      obj{"type": "http", "scheme": "bearer", "description": "An API key (ak_…)"},
				"streamToken": obj{"type": "apiKey", "in": "query", "name": "token", "description": "A stream token for one run's events"},
				"session":     obj{"type": "apiKey", "in": "cookie", "name": "apprun_session", "description": "A website session (the website's own run pages)"},
			},
			"headers": headerDocs(),
		},
	}
}

// defaultsInWords moves each default of an input schema into its
// description ("Default: …"). In a component schema, generators (such as
// openapi-typescript with its defaults) read "default" as "always
// present", which holds for a response, not for a request: a minimal body
// would not compile. The capability's input_schema keeps "default".
func defaultsInWords(s any) any {
	switch v := s.(type) {
	case map[string]any:
		for k, sub := range v {
			switch k {
			case "default", "examples", "const", "enum":
			case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas":
				if named, ok := sub.(map[string]any); ok { // name → schema
					for name, schema := range named {
						named[name] = defaultsInWords(schema)
					}
				}
			default:
				v[k] = defaultsInWords(sub)
			}
		}
		if d, ok := v["default"]; ok {
			delete(v, "default")
			text, _ := json.Marshal(d)
			desc, _ := v["description"].(string)
			if desc != "" && !strings.HasSuffix(desc, ".") {
				desc += "."
			}
			v["description"] = strings.TrimSpace(desc + " Default: " + string(text) + ".")
		}
	case []any:
		for i, sub := range v {
			v[i] = defaultsInWords(sub)
		}
	}
	return s
}

// createRunSchema is the request that runs one App.
func createRunSchema(app *engine.App) obj {
	brand := obj{"type": []string{"string", "null"}, "description": "A brand context (POST /api/v1/brand-contexts) to write for; null: none"}
	if !app.AcceptsBrandContext {
		brand = obj{"type": "null", "description": "This App takes no brand context"}
	}
	return obj{"type": "object", "required": []string{"app_slug", "input"}, "additionalProperties": false,
		"properties": obj{
			"app_slug":         obj{"const": app.Slug},
			"input":            ref("Input." + app.Slug),
			"brand_context_id": brand,
			"max_credit_cost":  obj{"type": "integer", "minimum": 0, "description": "The most the client agrees to pay: a higher price answers 409 pricing_not_ready, nothing charged"},
			"webhook_url": obj{"type": "string", "format": "uri", "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://", "maxLength": 2048,
				"description": "An http(s) URL without credentials that receives the run's terminal event, signed per Standard Webhooks"},
		}}
}

func headerDocs() obj {
	integer := obj{"type": "integer", "minimum": 0}
	return obj{
		"RateLimit-Limit":     obj{"description": "Requests a minute the limit allows", "schema": integer},
		"RateLimit-Remaining": obj{"description": "Requests left in the window", "schema": integer},
		"RateLimit-Reset":     obj{"description": "Seconds until the oldest counted request leaves the window", "schema": integer},
		"Retry-After":         obj{"description": "Seconds to wait before retrying", "schema": integer},
		"Location":            obj{"description": "The run's result_url", "required": true, "schema": obj{"type": "string"}},
		"Idempotent-Replayed": obj{"description": "true when the answer is the original 201 of an earlier request with the same Idempotency-Key", "schema": obj{"type": "string", "enum": []string{"true"}}},
		"Content-Disposition": obj{"description": "format=csv: attachment, with a file name", "schema": obj{"type": "string"}},
		"WWW-Authenticate":    obj{"description": "The scheme to authenticate with: Bearer realm=\"apprun\"", "required": true, "schema": obj{"type": "string"}},
	}
}

func hdr(name string) obj { return obj{"$ref": "#/components/headers/" + name} }

func operationDoc(op operation) obj {
	d := obj{"operationId": op.id, "summary": op.summary}
	switch op.auth {
	case "key":
		d["security"] = []any{obj{"apiKey": []any{}}}
	case "stream":
		d["security"] = []any{obj{"apiKey": []any{}}, obj{"streamToken": []any{}}, obj{"session": []any{}}}
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
		params = append(params, obj{"name": q, "in": "query", "required": false, "schema": paramSchemas[q]})
	}
	for _, h := range op.headers {
		params = append(params, obj{"name": h, "in": "header", "required": false, "schema": paramSchemas[h]})
	}
	if params != nil {
		d["parameters"] = params
	}
	if op.body != "" {
		d["requestBody"] = obj{"required": true, "content": obj{"application/json": obj{"schema": ref(op.body)}}}
	}
	limited := func() obj { // RateLimit-* on every answer of a limited operation
		h := obj{}
		if op.auth != "none" {
			for _, n := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} {
				h[n] = hdr(n)
			}
		}
		return h
	}
	ok := obj{"description": http.StatusText(op.status), "headers": limited()}
	switch op.result {
	case "stream":
		ok["description"] = "The run's events: started, tool_running, then completed or failed, after which the server closes the stream. " +
			"Each has `id:` (its log sequence, for Last-Event-ID), `event:` (its kind) and `data:` (JSON, the schema Event.<kind>). " +
			"Comments `: heartbeat` keep the connection alive."
		ok["content"] = obj{"text/event-stream": obj{"schema": obj{"type": "string",
			"$defs": obj{"started": ref("Event.started"), "tool_running": ref("Event.tool_running"),
				"completed": ref("Event.completed"), "failed": ref("Event.failed")}}}}
	case "":
	default:
		ok["content"] = obj{"application/json": obj{"schema": ref(op.result)}}
	}
	if op.id == "getStatement" {
		ok["headers"].(obj)["Content-Disposition"] = hdr("Content-Disposition")
		ok["content"].(obj)["text/csv"] = obj{"schema": obj{"type": "string", "description": "format=csv: a header, an opening_balance row, " +
			"the lines oldest first, a closing_balance row; columns " + strings.Join(statementColumns, ", ")}}
	}
	if op.id == "createRun" || op.id == "rerunRun" {
		ok["headers"].(obj)["Location"] = hdr("Location")
		ok["headers"].(obj)["Idempotent-Replayed"] = hdr("Idempotent-Replayed")
	}
	// The webhook a request's URL receives, as a callback of the request
	// that names the URL (the account's endpoints are the document's
	// webhooks). Generators keep what callbacks name: oapi-codegen prunes
	// what only webhooks name, and its client did not compile (issue 47).
	switch op.id {
	case "createRun":
		d["callbacks"] = obj{"runFinished": obj{"{$request.body#/webhook_url}": webhookItem("runFinishedAtRunURL")}}
	case "addWebhookEndpoint":
		d["callbacks"] = obj{"runFinished": obj{"{$request.body#/url}": webhookItem("runFinishedAtEndpoint")}}
	}
	responses := obj{strconv.Itoa(op.status): ok}
	if op.result == "stream" {
		responses["204"] = obj{"description": "No Content: resumed (Last-Event-ID or lastEventSeq) at or after a finished run's last event; " +
			"the client has every event, and EventSource stops reconnecting", "headers": limited()}
	}
	byStatus := map[int][]string{}
	for _, c := range op.codes {
		byStatus[StatusOf(c)] = append(byStatus[StatusOf(c)], string(c))
	}
	byStatus[http.StatusInternalServerError] = []string{string(engine.CodeInternal)}
	byStatus[http.StatusServiceUnavailable] = []string{string(engine.CodeInternal)}
	for st, codes := range byStatus {
		sort.Strings(codes)
		h := limited()
		switch st {
		case http.StatusUnauthorized:
			h["WWW-Authenticate"] = hdr("WWW-Authenticate")
		case http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusConflict:
			h["Retry-After"] = hdr("Retry-After")
		}
		resp := obj{"description": http.StatusText(st) + ": " + strings.Join(codes, ", "),
			"x-error-codes": codes, "content": obj{"application/json": obj{"schema": ref("Error")}}}
		if len(h) > 0 {
			resp["headers"] = h
		}
		responses[strconv.Itoa(st)] = resp
	}
	d["responses"] = responses
	return d
}

// paramSchemas are the schemas of the query and header parameters.
var paramSchemas = map[string]obj{
	"limit":            {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
	"with":             {"type": "string", "description": "The run to compare with (required)"},
	"cursor":           {"type": "string", "pattern": "^[0-9]+$", "description": "The previous page's next_cursor"},
	"from":             {"type": "string", "description": "The period's start, included: RFC 3339, or a date (YYYY-MM-DD, UTC midnight)"},
	"to":               {"type": "string", "description": "The period's end, excluded: RFC 3339, or a date, whose whole day is included"},
	"format":           {"type": "string", "enum": []string{"json", "csv"}, "default": "json"},
	"lastEventSeq":     {"type": "integer", "minimum": 0, "description": "Resume after this event id (as Last-Event-ID)"},
	"token":            {"type": "string", "maxLength": 512, "description": "A stream token (POST …/stream-token)"},
	"Last-Event-ID":    {"type": "string", "pattern": "^[0-9]*$", "description": "Resume after this event id"},
	"Stripe-Signature": {"type": "string", "description": "Stripe's signature of the body: t=<timestamp>,v1=<HMAC-SHA256>"},
	"Idempotency-Key":  {"type": "string", "minLength": 1, "maxLength": service.MaxIdempotencyKey, "pattern": "^[\\x20-\\x7e]+$"},
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
