package httpapi

import (
	"encoding/json"
	"maps"

	"github.com/apprun/apprun/engine"
)

// typedRuns adds each App's output schema (Output.<slug>) and a run of it
// (Run.<slug>: the run with app_slug that App's and output of that
// schema), and makes Run the oneOf of them chosen by app_slug: a
// generated client narrows a run by its app_slug to its App's output
// (issue 47). Every App of the catalog has a branch, runnable or not:
// its runs stay in history.
func typedRuns(schemas obj, catalog []*engine.App) {
	base := schemas["Run"].(obj)
	var branches, outputs []any
	mapping := obj{}
	for _, app := range catalog {
		out := obj{}
		if len(app.OutputSchema) > 0 {
			_ = json.Unmarshal(app.OutputSchema, &out)
			delete(out, "$schema") // the document's dialect is 2020-12 already
		}
		schemas["Output."+app.Slug] = out
		outputs = append(outputs, ref("Output."+app.Slug))
		props := maps.Clone(base["properties"].(obj))
		props["app_slug"] = obj{"type": "string", "enum": []string{app.Slug}}
		props["output"] = obj{"description": "Once completed: the App's output, its members in the order Output." + app.Slug +
			" declares them; null once failed (a cancel included)",
			"anyOf": []any{ref("Output." + app.Slug), obj{"type": "null"}}}
		run := maps.Clone(base)
		run["properties"] = props
		run["description"] = "A run of " + app.Slug
		name := "Run." + app.Slug
		schemas[name] = run
		branches = append(branches, ref(name))
		mapping[app.Slug] = "#/components/schemas/" + name
	}
	schemas["Run"] = obj{"description": "A run: the member app_slug chooses the schema of output",
		"oneOf": branches, "discriminator": obj{"propertyName": "app_slug", "mapping": mapping}}
	// The completed event has no app_slug to choose by: its output is
	// one of the Apps' outputs (its run's app_slug says which).
	completed := schemas["Event.completed"].(obj)
	props := maps.Clone(completed["properties"].(obj))
	props["output"] = obj{"description": "The App's output: Output.<app_slug> of the run", "anyOf": outputs}
	completed = maps.Clone(completed)
	completed["properties"] = props
	schemas["Event.completed"] = completed
}

// errorEnvelope is components/schemas/Error, the one error envelope every
// error answer has. An answer lists the codes it may carry in its
// x-error-codes (and its description); the contract test holds answers
// to them. A 429 names the limit it hit.
func errorEnvelope() obj {
	var codes, limited []string
	for _, c := range engine.ErrorCodes() {
		codes = append(codes, string(c.Code))
		if c.Status == 429 {
			limited = append(limited, string(c.Code))
		}
	}
	return obj{"type": "object", "required": []string{"error"}, "additionalProperties": false,
		"description": "The error envelope of every error answer",
		"properties": obj{"error": obj{
			"type": "object", "required": []string{"code", "message"}, "additionalProperties": false,
			"properties": obj{
				"code":    obj{"type": "string", "enum": codes, "description": "What went wrong (docs/api.md, Errors)"},
				"message": obj{"type": "string", "description": "In words, for a person"},
				"limit": obj{"type": "string", "enum": engine.LimitNames,
					"description": "rate_limited and concurrency_limit: the limit hit"},
			},
			"if":   obj{"required": []string{"code"}, "properties": obj{"code": obj{"enum": limited}}},
			"then": obj{"required": []string{"limit"}}}}}
}
