// Package inputschema checks an App's input against its JSON Schema
// (draft 2020-12) with kaptinlin/jsonschema. It is the engine's
// SchemaCompiler: the domain states the rule (input must match the App's
// schema, defaults are filled in) and this package does the JSON Schema
// work, so the engine itself imports no HTTP-capable library.
package inputschema

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/kaptinlin/jsonschema"

	"github.com/apprun/apprun/engine"
)

// Compile compiles one App's input schema. It is an engine.SchemaCompiler.
func Compile(raw json.RawMessage) (engine.InputSchema, error) {
	s, err := jsonschema.NewCompiler().Compile(raw)
	if err != nil {
		return nil, err
	}
	return schema{s}, nil
}

var _ engine.SchemaCompiler = Compile

type schema struct{ s *jsonschema.Schema }

// Check validates input and returns it with schema defaults filled in, or
// a description naming each failing field.
func (v schema) Check(input map[string]any) (map[string]any, string) {
	res := v.s.Validate(input)
	if !res.IsValid() {
		return nil, describe(res, input)
	}
	out := make(map[string]any, len(input))
	for k, val := range input {
		out[k] = val
	}
	if v.s.Properties != nil {
		for name, p := range *v.s.Properties {
			if _, set := out[name]; !set && p != nil && p.Default != nil {
				out[name] = p.Default
			}
		}
	}
	return out, ""
}

// describe turns a validation result into "field: reason; field: reason".
// Absent fields are reported once, by the required check, and a field that
// is not allowed at all once, by the additionalProperties check.
func describe(res *jsonschema.EvaluationResult, input map[string]any) string {
	var parts []string
	var walk func(r *jsonschema.EvaluationResult)
	walk = func(r *jsonschema.EvaluationResult) {
		if r == nil || r.Valid {
			return
		}
		loc := strings.TrimPrefix(r.InstanceLocation, "/")
		keys := make([]string, 0, len(r.Errors))
		for k := range r.Errors {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if top, _, _ := strings.Cut(loc, "/"); top != "" {
			if _, present := input[top]; !present {
				return
			}
		}
		for _, k := range keys {
			if (k == "properties" || k == "allOf") && len(r.Details) > 0 {
				continue // the details name the field
			}
			if r.Errors[k].Code == "false_schema_mismatch" {
				continue // said by additionalProperties on the parent
			}
			field := "input"
			if loc != "" {
				field = "input." + strings.ReplaceAll(loc, "/", ".")
			}
			parts = append(parts, field+": "+r.Errors[k].Error())
		}
		for _, d := range r.Details {
			walk(d)
		}
	}
	walk(res)
	if len(parts) == 0 {
		return "input does not match the App's input schema"
	}
	sort.Strings(parts)
	return strings.Join(dedupe(parts), "; ")
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
