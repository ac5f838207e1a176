package httpapi

import (
	"maps"

	"github.com/apprun/apprun/billing"
	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
)

// object is a closed JSON object schema: the members listed in required
// are always present, the others may be, and no other member ever is.
func object(required []string, props obj) obj {
	return obj{"type": "object", "required": required, "additionalProperties": false, "properties": props}
}

// failureCodes are the error codes of a failed run.
var failureCodes = []string{engine.FailTimeout, engine.FailExecution, engine.FailInterrupted, engine.FailModelUnavailable,
	engine.FailModelRejected, engine.FailModelReply, engine.FailSourceUnavailable, engine.FailCanceled}

// baseSchemas are the API's own shapes.
func baseSchemas() obj {
	str, integer := obj{"type": "string"}, obj{"type": "integer"}
	stamp := obj{"type": "string", "format": "date-time", "description": "RFC 3339, UTC, to the millisecond"}
	path := obj{"type": "string", "description": "A path on this server"}
	runError := object([]string{"code", "message"}, obj{
		"code":    obj{"type": "string", "enum": failureCodes, "description": "Why the run failed; canceled: its owner canceled it"},
		"message": obj{"type": "string", "description": "What happened, in words for the person who ran it"},
		"details": obj{"type": "string", "description": "The technical account, when there is one: the model provider's own message, or what the output check found, as its validator said it"}})
	tokens := object([]string{"prompt_tokens", "completion_tokens", "total_tokens"}, obj{
		"prompt_tokens": integer, "completion_tokens": integer, "total_tokens": integer})
	runUsage := object([]string{"model_calls", "steps"}, obj{
		"model_calls": obj{"type": "integer", "description": "Every model call the run made: repairs, and an execution interrupted and made again, included"},
		"tokens":      ref("TokenUsage"),
		"steps": obj{"type": "array", "items": object([]string{"step", "model_calls"}, obj{
			"step": str, "model_calls": integer, "tokens": ref("TokenUsage")})}})
	run := object([]string{"run_no", "app_slug", "status", "credit_cost", "created_at", "stream_url", "result_url"}, obj{
		"run_no": str, "app_slug": str,
		"status":      obj{"type": "string", "enum": []string{"queued", "running", "completed", "failed"}},
		"credit_cost": obj{"type": "integer", "description": "The Credits charged at creation"},
		"created_at":  stamp, "started_at": stamp, "finished_at": stamp,
		"summary":          obj{"type": "string", "description": "Once finished: one sentence saying what the run made, or what failed and that its Credits were refunded"},
		"output":           obj{"description": "Once finished: the App's output (completed), or null (failed, a cancel included)"},
		"error":            ref("RunError"),
		"refunded_credits": obj{"type": "integer", "description": "A failed run's refund: its whole charge"},
		"usage":            ref("RunUsage"),
		"stream_url":       path, "result_url": path})
	page := func(item string) obj {
		return object([]string{"data", "next_cursor"}, obj{"data": obj{"type": "array", "items": ref(item)},
			"next_cursor": obj{"type": []string{"string", "null"}, "description": "The cursor of the next page; null on the last"}})
	}
	list := func(item string) obj {
		return object([]string{"data"}, obj{"data": obj{"type": "array", "items": ref(item)}})
	}
	httpURL := obj{"type": "string", "format": "uri", "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://", "maxLength": 2048}
	schemas := obj{
		"RunError":    runError,
		"RunUsage":    runUsage,
		"TokenUsage":  tokens,
		"Run":         run,
		"RunPage":     page("Run"),
		"CreatedRun":  object([]string{"run_no", "credit_cost", "stream_url", "result_url"}, obj{"run_no": str, "credit_cost": integer, "stream_url": path, "result_url": path}),
		"StreamToken": object([]string{"token", "expires_at", "stream_url"}, obj{"token": str, "expires_at": stamp, "stream_url": path}),
		"Capability": object([]string{"slug", "name", "description", "category", "credit_cost", "price_ready", "timeout_seconds", "retention_days", "retention_seconds", "accepts_brand_context", "input_schema", "output_schema"}, obj{
			"slug": str, "name": str, "description": str,
			"category":              obj{"type": "string", "description": "The catalog's group the App belongs to"},
			"credit_cost":           obj{"type": []string{"integer", "null"}, "description": "The price a run is charged now; null while the App has no price"},
			"price_ready":           obj{"type": "boolean"},
			"timeout_seconds":       obj{"type": "integer", "description": "A run that takes longer fails with timeout and is refunded"},
			"retention_days":        obj{"type": "integer", "description": "How long a finished run, its events and its output are kept, in whole days (0 for less than a day: retention_seconds is exact)"},
			"retention_seconds":     obj{"type": "integer", "description": "How long a finished run, its events, its record and its output are kept, exactly"},
			"accepts_brand_context": obj{"type": "boolean"},
			"input_schema":          obj{"type": "object", "description": "The JSON Schema (2020-12) of the App's input"},
			"output_schema": obj{"type": "object", "description": "The JSON Schema (2020-12) of a completed run's output, members in the order the output has them " +
				"(also components/schemas/Output.<slug>); {} for an App that declares none"}}),
		"CapabilityList": list("Capability"),
		"Account":        object([]string{"account_id", "balance", "active_runs"}, obj{"account_id": str, "balance": integer, "active_runs": integer}),
		"StatementLine": object([]string{"type", "amount", "at", "balance", "seq", "hash"}, obj{
			"type":   obj{"type": "string", "enum": ledger.LineTypes},
			"seq":    obj{"type": "integer", "description": "The event's sequence in the log"},
			"hash":   obj{"type": "string", "description": "The SHA-256 of the event's bytes in the log, hex: the next event of the account names it as prev"},
			"actor":  obj{"type": "string", "description": "Who wrote it: admin:<token name>, web:<account>, stripe:<payment>, system:<what>; absent on a run's lines"},
			"reason": obj{"type": "string", "description": "Why, as the operator said (grants, adjustments)"},
			"pack":   str, "paid": obj{"type": "integer", "description": "A purchase's payment (a revocation's refund), in the currency's smallest unit"},
			"currency": str, "payment_intent": obj{"type": "string", "description": "A purchase's Stripe PaymentIntent"},
			"owed":   obj{"type": "integer", "description": "A dispute's: the Credits the balance could not give, owed until the dispute is won"},
			"amount": obj{"type": "integer", "description": "Signed: a charge and a revocation are negative"}, "run_no": str, "at": stamp,
			"app_slug":  obj{"type": "string", "description": "A charge's or refund's App, kept by the ledger after the run's log expires (absent on lines written before it was)"},
			"record":    obj{"type": "string", "description": "A charge's run record head hash (sha256:…): the record's head_hash, so an exported record matches its charge after the run is gone (absent on charges written before records)"},
			"price_at":  obj{"type": "string", "format": "date-time", "description": "A charge's price in effect: when the App's price it was charged at was set (the admin price history lists each price with its time, actor and reason; absent on charges written before the ledger kept it)"},
			"balance":   obj{"type": "integer", "description": "The balance after this line; below zero only after a revocation"},
			"reference": obj{"type": "string", "description": "A purchase's or revocation's payment: the Stripe Checkout Session id"}}),
		"CreditPack": object([]string{"id", "credits", "price", "currency"}, obj{"id": str, "credits": integer,
			"price":    obj{"type": "integer", "description": "In the currency's smallest unit (cents for usd)"},
			"currency": obj{"type": "string", "pattern": "^[a-z]{3}$"}}),
		"CreditPackList": object([]string{"data", "selling"}, obj{"data": obj{"type": "array", "items": ref("CreditPack")},
			"selling": obj{"type": "boolean"}, "how_to_add": obj{"type": "string", "description": "When selling is false: how Credits are added"}}),
		"CheckoutRequest": object([]string{"pack"}, obj{"pack": obj{"type": "string", "description": "A pack's id from listCreditPacks"}}),
		"CheckoutSession": object([]string{"session_id", "url"}, obj{"session_id": str, "url": obj{"type": "string", "description": "Stripe's hosted checkout page"}}),
		"StripeEvent": obj{"type": "object", "required": []string{"id", "type"}, "additionalProperties": true,
			"description": "A Stripe event (https://docs.stripe.com/api/events/object), API version " + billing.APIVersion,
			"properties":  obj{"id": str, "type": str}},
		"StripeReceipt": object([]string{"received"}, obj{"received": obj{"const": true}}),
		"StatementPage": func() obj {
			p := page("StatementLine")
			p["required"] = append(p["required"].([]string), "account_id", "opening_balance", "closing_balance", "totals", "by_app")
			props := p["properties"].(obj)
			props["account_id"], props["from"], props["to"] = str, stamp, stamp
			props["opening_balance"] = obj{"type": "integer", "description": "The balance just before from: opening_balance plus every line's amount in the period is closing_balance"}
			props["closing_balance"] = obj{"type": "integer", "description": "The balance at to (or now)"}
			props["totals"] = obj{"type": "object", "additionalProperties": integer, "description": "The period's amounts summed by line type"}
			props["by_app"] = obj{"type": "array", "items": object([]string{"app_slug", "runs", "charged", "refunded", "net"},
				obj{"app_slug": str, "runs": integer, "charged": integer, "refunded": integer, "net": integer})}
			return p
		}(),
		"WebhookSecret":          object([]string{"secret"}, obj{"secret": obj{"type": "string", "pattern": "^whsec_"}}),
		"WebhookEndpoint":        object([]string{"endpoint_id", "url", "created_at"}, obj{"endpoint_id": str, "url": str, "created_at": stamp}),
		"WebhookEndpointRequest": object([]string{"url"}, obj{"url": httpURL}),
		"WebhookEndpointList":    list("WebhookEndpoint"),
		"Delivery": object([]string{"webhook_id", "run_no", "event", "url", "status", "attempts", "updated_at"}, obj{
			"webhook_id": str, "run_no": str, "event": obj{"type": "string", "description": "The terminal event: completed or failed"},
			"url": str, "status": obj{"type": "string", "enum": []string{"retrying", "delivered", "failed"}}, "attempts": integer,
			"last_status": integer, "last_error": str, "next_attempt_at": stamp, "updated_at": stamp}),
		"DeliveryList": list("Delivery"),
		"Redelivery":   object([]string{"queued"}, obj{"queued": obj{"const": true}}),
		"BrandContextRequest": object([]string{"name"}, obj{
			"name": str, "description": str, "voice": str, "audience": str, "website": str}),
		"BrandContextEdit": obj{"type": "object", "additionalProperties": false, "minProperties": 1,
			"properties": obj{"name": str, "description": str, "voice": str, "audience": str, "website": str}},
		"BrandContext": object([]string{"brand_context_id", "name", "created_at"}, obj{"brand_context_id": str, "name": str, "created_at": stamp,
			"description": str, "voice": str, "audience": str, "website": str, "updated_at": stamp}),
		"BrandContextList": list("BrandContext"),
		"LedgerPublicKey": object([]string{"algorithm", "public_key", "pem", "key_id"}, obj{"algorithm": obj{"type": "string", "const": "Ed25519"},
			"public_key": obj{"type": "string", "description": "the 32-byte key, base64"}, "pem": obj{"type": "string", "description": "the key as a PEM PUBLIC KEY file"},
			"key_id": obj{"type": "string", "description": "the first 16 hex digits of the key's SHA-256"}}),
		"Checkpoint": object([]string{"kind", "v", "at", "through", "accounts", "outstanding", "heads", "sig"}, obj{
			"kind": obj{"type": "string", "enum": []string{"account", "log"}}, "v": obj{"type": "integer", "const": 1}, "at": stamp,
			"through":     obj{"type": "integer", "description": "Every account event at or before this log sequence is covered"},
			"prev":        obj{"type": "string", "description": "A log checkpoint's: the hash of the one before"},
			"accounts":    obj{"type": "integer", "description": "A log checkpoint's: accounts opened through through (0 in an account's)"},
			"outstanding": obj{"type": "integer", "description": "A log checkpoint's: the sum of all balances through through (0 in an account's)"},
			"heads": obj{"type": "array", "items": object([]string{"account_id", "seq", "hash", "balance"}, obj{
				"account_id": str, "seq": obj{"type": "integer", "description": "The log sequence of the account's newest event"},
				"hash":    obj{"type": "string", "description": "That event's SHA-256, hex, as stored"},
				"balance": obj{"type": "integer"}})},
			"sig": obj{"type": "string", "description": "Ed25519, base64, by the ledger's key (GET /api/v1/ledger/public-key)"}}),
		"OpenAPIDocument": obj{"type": "object", "required": []string{"openapi", "info", "paths"}, "description": "An OpenAPI 3.1 document",
			"properties": obj{"openapi": obj{"type": "string"}, "info": obj{"type": "object"}, "paths": obj{"type": "object"}}},
		"Refund": object([]string{"credits"}, obj{"credits": integer}),
	}
	maps.Copy(schemas, recordSchemas(schemas["StatementLine"].(obj)))
	for kind, s := range eventSchemas() {
		schemas["Event."+kind] = s
	}
	schemas["WebhookPayload"] = object([]string{"type", "timestamp", "data"}, obj{
		"type":      obj{"type": "string", "enum": []string{"run.completed", "run.failed"}},
		"timestamp": stamp,
		"data":      obj{"oneOf": []any{ref("Event.completed"), ref("Event.failed")}}})
	return schemas
}

// eventSchemas are the data of each event kind of a run's stream.
func eventSchemas() map[string]obj {
	str := obj{"type": "string"}
	stamp := obj{"type": "string", "format": "date-time"}
	result := obj{"type": "string", "description": "The run's result_url"}
	return map[string]obj{
		"started": object([]string{"run_no", "at", "status"}, obj{"run_no": str, "at": stamp, "status": obj{"const": "running"}}),
		"tool_running": object([]string{"run_no", "at", "step", "steps", "tool", "message"}, obj{"run_no": str, "at": stamp,
			"step": obj{"type": "integer", "minimum": 0}, "steps": obj{"type": "integer", "minimum": 0},
			"progress": obj{"type": "number", "minimum": 0, "maximum": 1}, "tool": str, "message": str}),
		"completed": object([]string{"run_no", "at", "status", "summary", "output", "result_url"}, obj{"run_no": str, "at": stamp,
			"status": obj{"const": "completed"}, "summary": str, "output": obj{"description": "The App's output"}, "result_url": result}),
		"failed": object([]string{"run_no", "at", "status", "error", "refund", "result_url"}, obj{"run_no": str, "at": stamp,
			"status": obj{"const": "failed"}, "error": ref("RunError"), "refund": ref("Refund"), "result_url": result}),
	}
}

// webhooksDoc describes what a run's webhook receives.
func webhooksDoc() obj {
	return obj{"runFinished": webhookItem("runFinished")}
}

// webhookItem is the request a webhook receiver gets: the document's
// webhooks and the callbacks of the requests that name a receiver, each
// with its own operationId.
func webhookItem(id string) obj {
	header := func(name, desc string) obj {
		return obj{"name": name, "in": "header", "required": true, "description": desc, "schema": obj{"type": "string"}}
	}
	return obj{"post": obj{
		"summary": "A run ended (completed, or failed: a cancel included). Signed per Standard Webhooks with the account's secret " +
			"(GET /api/v1/webhooks/secret); retried for 24 hours until a 2xx.",
		"operationId": id,
		"security":    []any{}, // the receiver checks the signature
		"parameters": []any{
			header("webhook-id", "The terminal event's id, as the event stream's id: dedupe with it"),
			header("webhook-timestamp", "Unix seconds"),
			header("webhook-signature", "v1,<base64 HMAC-SHA256 of {id}.{timestamp}.{body}>"),
		},
		"requestBody": obj{"required": true, "content": obj{"application/json": obj{"schema": ref("WebhookPayload")}}},
		"responses":   obj{"200": obj{"description": "Any 2xx acknowledges the delivery; anything else is retried"}},
	}}
}
