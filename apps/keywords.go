package apps

import (
	"encoding/json"
	"fmt"
	"sort"
)

// keywords are the JSON Schema keywords a definition may use. A schema
// validator ignores words it does not know, so a typo, or YAML that split
// an unquoted "description: Role, company type" at its comma, would pass
// silently; the load refuses them instead.
var keywords = map[string]bool{
	"$schema": true, "$id": true, "$defs": true, "$ref": true, "$comment": true, "title": true, "description": true,
	"type": true, "enum": true, "const": true, "default": true, "examples": true, "format": true, "pattern": true,
	"minLength": true, "maxLength": true, "minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
	"multipleOf": true, "items": true, "prefixItems": true, "minItems": true, "maxItems": true, "uniqueItems": true, "contains": true,
	"properties": true, "required": true, "additionalProperties": true, "patternProperties": true, "propertyNames": true,
	"minProperties": true, "maxProperties": true, "dependentRequired": true,
	"allOf": true, "anyOf": true, "oneOf": true, "not": true, "if": true, "then": true, "else": true,
	"readOnly": true, "writeOnly": true, "deprecated": true,
}

// checkKeywords walks a schema and names the first unknown keyword.
func checkKeywords(raw json.RawMessage, at string) error {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return nil // true, false, or not an object: the compiler judges it
	}
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !keywords[k] {
			return fmt.Errorf("%s: %q is not a JSON Schema keyword (a misspelling, or an unquoted YAML value with a comma?)", at, k)
		}
	}
	var subs []struct {
		at  string
		raw json.RawMessage
	}
	for _, k := range []string{"properties", "$defs", "patternProperties"} {
		var m map[string]json.RawMessage
		if json.Unmarshal(obj[k], &m) == nil {
			for name, s := range m {
				subs = append(subs, struct {
					at  string
					raw json.RawMessage
				}{at + "." + k + "." + name, s})
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames"} {
		if len(obj[k]) > 0 {
			subs = append(subs, struct {
				at  string
				raw json.RawMessage
			}{at + "." + k, obj[k]})
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf", "prefixItems"} {
		var list []json.RawMessage
		if json.Unmarshal(obj[k], &list) == nil {
			for i, s := range list {
				subs = append(subs, struct {
					at  string
					raw json.RawMessage
				}{fmt.Sprintf("%s.%s[%d]", at, k, i), s})
			}
		}
	}
	sort.Slice(subs, func(i, j int) bool { return subs[i].at < subs[j].at })
	for _, s := range subs {
		if err := checkKeywords(s.raw, s.at); err != nil {
			return err
		}
	}
	return nil
}
