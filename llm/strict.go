package llm

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Strict structured outputs (OpenAI's response_format json_schema with
// strict: true, which Azure OpenAI and OpenRouter pass on) accept a
// subset of JSON Schema: every object lists all its properties as
// required and sets additionalProperties false, and only some keywords
// are allowed. StrictSchema converts an App's output schema to that
// subset:
//
//   - an optional member becomes required and nullable (the caller
//     drops a null for a member the original schema does not require
//     before it checks the reply against that schema: apps/order.go);
//   - every object gets additionalProperties: false;
//   - a keyword strict mode does not take (minLength, maxLength, pattern,
//     default, title…) is left out of the strict schema and said in the
//     member's description instead. The prompt keeps the whole original
//     schema, and the reply is checked against it, so nothing is lost.

// strictKeywords are the keywords kept as they are: those every strict
// implementation documents. OpenAI now also takes some bounds (minItems,
// minimum, pattern…), Azure OpenAI's documentation still lists them as
// unsupported, so they go into the description, for every provider.
var strictKeywords = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true, "items": true,
	"enum": true, "const": true, "anyOf": true, "description": true, "$ref": true, "$defs": true,
}

// StrictSchema is schema converted for strict structured outputs. Its
// root must be an object.
func StrictSchema(schema json.RawMessage) (json.RawMessage, error) {
	var root map[string]any
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, fmt.Errorf("llm: strict schema: %w", err)
	}
	if root["type"] != "object" {
		return nil, fmt.Errorf("llm: strict schema: the root must be an object, not %v", root["type"])
	}
	out, err := json.Marshal(strictNode(root))
	if err != nil {
		return nil, fmt.Errorf("llm: strict schema: %w", err)
	}
	return out, nil
}

// strictNode converts one schema node.
func strictNode(n map[string]any) map[string]any {
	out := map[string]any{}
	var moved []string
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := n[k]
		switch {
		case k == "properties":
			props, _ := v.(map[string]any)
			required := map[string]bool{}
			if r, ok := n["required"].([]any); ok {
				for _, name := range r {
					if s, ok := name.(string); ok {
						required[s] = true
					}
				}
			}
			conv := map[string]any{}
			names := make([]string, 0, len(props))
			for name, p := range props {
				pm, _ := p.(map[string]any)
				c := strictNode(pm)
				if !required[name] {
					c = nullable(c)
				}
				conv[name] = c
				names = append(names, name)
			}
			sort.Strings(names)
			out["properties"] = conv
			all := make([]any, len(names))
			for i, name := range names {
				all[i] = name
			}
			out["required"] = all
		case k == "required" || k == "additionalProperties":
			// set below from the properties
		case k == "items":
			if m, ok := v.(map[string]any); ok {
				out["items"] = strictNode(m)
			}
		case k == "anyOf":
			if list, ok := v.([]any); ok {
				conv := make([]any, 0, len(list))
				for _, s := range list {
					m, _ := s.(map[string]any)
					conv = append(conv, strictNode(m))
				}
				out["anyOf"] = conv
			}
		case k == "$defs":
			if defs, ok := v.(map[string]any); ok {
				conv := map[string]any{}
				for name, d := range defs {
					m, _ := d.(map[string]any)
					conv[name] = strictNode(m)
				}
				out["$defs"] = conv
			}
		case strictKeywords[k]:
			out[k] = v
		case k == "$schema" || k == "$id" || k == "examples" || k == "$comment":
			// annotations strict mode refuses and the model does not need
		default:
			b, _ := json.Marshal(v)
			moved = append(moved, fmt.Sprintf("%s %s", k, b))
		}
	}
	if isObject(out) {
		out["additionalProperties"] = false
		if _, ok := out["properties"]; !ok {
			out["properties"] = map[string]any{}
			out["required"] = []any{}
		}
	}
	if len(moved) > 0 {
		note := "Also: " + strings.Join(moved, "; ") + "."
		if d, _ := out["description"].(string); d != "" {
			note = d + " " + note
		}
		out["description"] = note
	}
	return out
}

// isObject is whether a converted node is of type object.
func isObject(n map[string]any) bool {
	switch t := n["type"].(type) {
	case string:
		return t == "object"
	case []any:
		for _, x := range t {
			if x == "object" {
				return true
			}
		}
	}
	return false
}

// nullable is n that also takes null: a type list where n has a type, an
// anyOf with null otherwise.
func nullable(n map[string]any) map[string]any {
	switch t := n["type"].(type) {
	case string:
		if t == "null" {
			return n
		}
		n["type"] = []any{t, "null"}
		if e, ok := n["enum"].([]any); ok {
			n["enum"] = append(e, nil)
		}
		return n
	case []any:
		for _, x := range t {
			if x == "null" {
				return n
			}
		}
		n["type"] = append(t, "null")
		if e, ok := n["enum"].([]any); ok {
			n["enum"] = append(e, nil)
		}
		return n
	}
	return map[string]any{"anyOf": []any{n, map[string]any{"type": "null"}}}
}
