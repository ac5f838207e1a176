// Package inputschema checks an App's input against its JSON Schema
// (draft 2020-12) with kaptinlin/jsonschema. Its Compile is what
// engine.NewCatalog compiles Apps' schemas with: the domain states the rule (input must match the App's
// schema, defaults are filled in) and this package does the JSON Schema
// work, so the engine itself imports no HTTP-capable library.
package inputschema

import (
	"encoding/json"
	"sort"
	"strings"
	"sync"

	"github.com/kaptinlin/jsonschema"

	"github.com/apprun/apprun/engine"
)

// Compile compiles one App's input schema (engine.NewCatalog's compile).
// A schema text compiled before in this process is not compiled again: a
// node compiles every App's schema twice as it starts (its catalog and
// the replay's), and a test binary starts many nodes; compiling the 63
// shipped schemas was 8 % of the CPU of the apps tests. A compiled
// schema is read-only (a node validates with it from every request at
// once).
func Compile(raw json.RawMessage) (engine.InputSchema, error) {
	compiled.Lock()
	s, ok := compiled.byText[string(raw)]
	compiled.Unlock()
	if ok {
		return schema{s}, nil
	}
	s, err := jsonschema.NewCompiler().Compile(raw)
	if err != nil {
		return nil, err
	}
	compiled.Lock()
	if len(compiled.byText) < maxCompiled {
		compiled.byText[string(raw)] = s
	}
	compiled.Unlock()
	return schema{s}, nil
}

// maxCompiled bounds what compiled keeps: beyond it, schemas are compiled
// each time, as before.
const maxCompiled = 1024

var compiled = struct {
	sync.Mutex
	byText map[string]*jsonschema.Schema
}{byText: map[string]*jsonschema.Schema{}}

type schema struct{ s *jsonschema.Schema }

// Check validates input and returns it with schema defaults filled in, or
// each failing field and why.
func (v schema) Check(input map[string]any) (map[string]any, []engine.FieldError) {
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
	return out, nil
}

// describe lists what a validation result found wrong, a field at a time,
// sorted and without repeats ("input.x" then its message). Absent fields
// are reported once, by the required check, and a field that is not
// allowed at all once, by the additionalProperties check.
func describe(res *jsonschema.EvaluationResult, input map[string]any) []engine.FieldError {
	var out []engine.FieldError
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
			out = append(out, engine.FieldError{Field: field, Code: k, Message: r.Errors[k].Error()})
		}
		for _, d := range r.Details {
			walk(d)
		}
	}
	walk(res)
	if len(out) == 0 {
		return []engine.FieldError{{Field: "input", Code: "schema", Message: "does not match the App's input schema"}}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Field+": "+out[i].Message < out[j].Field+": "+out[j].Message })
	kept := out[:0]
	for i, f := range out {
		if i == 0 || f.Field != out[i-1].Field || f.Message != out[i-1].Message {
			kept = append(kept, f)
		}
	}
	return kept
}
