package httpapi

import (
	"maps"

	"github.com/apprun/apprun/engine"
)

// recordSchemas are the shapes of run records, reruns and comparisons
// (record.go); line is StatementLine, which a record's ledger line adds
// its chain's prev and signature to.
func recordSchemas(line obj) obj {
	str, integer, stamp := obj{"type": "string"}, obj{"type": "integer"}, obj{"type": "string", "format": "date-time"}
	tokens := object([]string{"prompt_tokens", "completion_tokens", "total_tokens"}, obj{
		"prompt_tokens": integer, "completion_tokens": integer, "total_tokens": integer})
	message := object([]string{"role", "content"}, obj{"role": obj{"type": "string", "enum": []string{"system", "user", "assistant"}, "description": "assistant: an earlier reply, sent back in a repair"}, "content": str})
	step := object([]string{"seq", "kind", "started_at", "ended_at"}, obj{
		"seq":        obj{"type": "integer", "description": "The sequence of its event in the run's log"},
		"kind":       obj{"type": "string", "enum": []string{engine.RecordStart, engine.RecordModel, engine.RecordSource}},
		"step":       obj{"type": "string", "description": "The App definition's step"},
		"call":       obj{"type": "integer", "description": "Its number among the run's calls of its kind, from 1"},
		"started_at": stamp, "ended_at": stamp,
		"with_model":    obj{"type": "boolean", "description": "start: whether the run took its App's model steps"},
		"brand_context": obj{"type": "object", "description": "start: the brand context as the run used it"},
		"provider":      obj{"type": "string", "description": "model: the provider's API base (no key, no query)"},
		"model":         str,
		"params":        object([]string{}, obj{"temperature": obj{"type": "number"}, "json_mode": str, "schema_name": str}),
		"messages":      obj{"type": "array", "items": message, "description": "model: the messages as sent"},
		"reply":         obj{"type": "string", "description": "model: the raw reply"},
		"usage":         tokens,
		"url":           obj{"type": "string", "description": "source: the address asked"},
		"final_url":     obj{"type": "string", "description": "source: the address answered, after redirects"},
		"status":        integer, "content_type": str,
		"bytes":     obj{"type": "integer", "description": "The source's length, or the model reply's, whole"},
		"sha256":    obj{"type": "string", "description": "source: the SHA-256 of its body, hex"},
		"content":   obj{"type": "string", "description": "source: its body (base64 when base64 is true)"},
		"base64":    obj{"type": "boolean"},
		"truncated": obj{"type": "boolean", "description": "Its text passed the record's bound (192 KiB a text) and was cut: it cannot be replayed"},
		"error":     ref("StepError")})
	ledgerLine := obj{}
	maps.Copy(ledgerLine, line)
	props := obj{}
	maps.Copy(props, line["properties"].(obj))
	props["prev"] = obj{"type": "string", "description": "The hash of the account's event before (the chain)"}
	props["sig"] = obj{"type": "string", "description": "The ledger key's signature of the event, when the ledger is signed"}
	ledgerLine["properties"] = props
	member := object([]string{"member", "same"}, obj{"member": str, "same": obj{"type": "boolean"},
		"a": obj{"description": "The first run's value (absent: it has none)"}, "b": obj{"description": "The other run's value"}})
	compared := object([]string{"run_no", "status", "credit_cost", "refunded_credits", "created_at"}, obj{
		"run_no": str, "status": obj{"type": "string", "enum": []string{"queued", "running", "completed", "failed"}},
		"error": ref("RunError"), "model": str, "app_version": str, "rerun_of": str,
		"credit_cost": integer, "refunded_credits": integer, "tokens": tokens,
		"duration_ms": obj{"type": "integer", "description": "From its start to its end"}, "created_at": stamp})
	return obj{
		"StepError":  object([]string{"code", "message"}, obj{"code": str, "message": str}),
		"RecordStep": step,
		"RecordLine": ledgerLine,
		"RunRecord": object([]string{"record_version", "run", "head", "head_hash", "steps", "events", "ledger"}, obj{
			"record_version": obj{"type": "integer", "const": 1},
			"run":            ref("Run"),
			"head": object([]string{"run_no", "app_slug", "app_version", "input", "credit_cost"}, obj{
				"run_no": str, "app_slug": str,
				"app_version": obj{"type": "string", "description": "The App definition's SHA-256 when the run was made"},
				"input":       obj{"type": "object", "description": "The input as validated, with the schema's defaults filled in"},
				"credit_cost": obj{"type": "integer", "description": "The price charged"}}),
			"head_hash":        obj{"type": "string", "description": "sha256: of the head's JSON; the charge's ledger line holds it as record"},
			"model":            obj{"type": "string", "description": "The model the run asked for instead of the service's (a rerun's)"},
			"rerun_of":         str,
			"rerun_changes":    obj{"type": "array", "items": str},
			"brand_context_id": str,
			"steps":            obj{"type": "array", "items": ref("RecordStep"), "description": "The record of the run's last execution, in order"},
			"tokens":           tokens,
			"events": obj{"type": "array", "description": "Every message of the run's log, as stored", "items": object([]string{"seq", "data"}, obj{
				"seq": integer, "data": obj{"type": "object"}})},
			"ledger": obj{"type": "array", "items": ref("RecordLine"), "description": "The run's charge, and its refund when it failed"}}),
		"RerunRequest": object([]string{}, obj{
			"model":           obj{"type": "string", "maxLength": 128, "description": "The model to ask instead of the service's: one it offers (an error names them)"},
			"input":           obj{"type": "object", "description": "Members of the run's input to change; the others stay"},
			"max_credit_cost": obj{"type": "integer", "minimum": 0, "description": "As on createRun"}}),
		"CreatedRerun": object([]string{"run_no", "credit_cost", "stream_url", "result_url", "rerun_of", "changed"}, obj{
			"run_no": str, "credit_cost": integer, "stream_url": str, "result_url": str, "rerun_of": str,
			"changed": obj{"type": "array", "items": str, "description": "What the rerun changed: model, input.<member>"}}),
		"RunComparison": object([]string{"app_slug", "runs", "input", "output", "same_input", "same_model", "same_output", "same_app_version"}, obj{
			"app_slug": str,
			"runs":     obj{"type": "array", "items": compared, "minItems": 2, "maxItems": 2},
			"input":    obj{"type": "array", "items": member}, "output": obj{"type": "array", "items": member},
			"same_input": obj{"type": "boolean"}, "same_model": obj{"type": "boolean"}, "same_output": obj{"type": "boolean"},
			"same_app_version": obj{"type": "boolean"}}),
	}
}
