package llmtest

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// CheckStrict holds a schema to the rules OpenAI documents for strict
// structured outputs ("Supported schemas",
// platform.openai.com/docs/guides/structured-outputs), and says the
// first it breaks the way OpenAI's 400 does:
//   - the root is an object, not anyOf;
//   - every object sets additionalProperties: false and lists every
//     property in required;
//   - types are string, number, integer, boolean, object, array, enum
//     and anyOf (null in a union);
//   - keywords are those listed as supported: for strings pattern and
//     format (of a listed set), for numbers multipleOf, minimum,
//     maximum, exclusiveMinimum, exclusiveMaximum, for arrays minItems
//     and maxItems; nothing else (minLength, default, oneOf…);
//   - at most 5,000 object properties, 10 levels of nesting, 1,000 enum
//     values, and 120,000 characters of property names, definition
//     names, enum and const values.
func CheckStrict(schema json.RawMessage) error {
	var root map[string]any
	if err := json.Unmarshal(schema, &root); err != nil {
		return fmt.Errorf("the schema is not a JSON object: %v", err)
	}
	if _, ok := root["anyOf"]; ok {
		return fmt.Errorf("In context=(), the root schema must not be 'anyOf'")
	}
	if root["type"] != "object" {
		return fmt.Errorf("In context=(), schema must be a JSON Schema of 'type: \"object\"', got 'type: \"%v\"'", root["type"])
	}
	c := &strictCheck{}
	if err := c.node(root, nil, 1); err != nil {
		return err
	}
	switch {
	case c.properties > 5000:
		return fmt.Errorf("the schema has %d object properties; at most 5000 are permitted", c.properties)
	case c.enums > 1000:
		return fmt.Errorf("the schema has %d enum values; at most 1000 are permitted", c.enums)
	case c.chars > 120000:
		return fmt.Errorf("the schema's names and values are %d characters long; at most 120000 are permitted", c.chars)
	}
	return nil
}

type strictCheck struct {
	properties, enums, chars int
}

var (
	strictCommon = map[string]bool{"type": true, "description": true, "title": true, "enum": true, "const": true,
		"anyOf": true, "$ref": true, "$defs": true, "definitions": true}
	strictByType = map[string]map[string]bool{
		"object":  {"properties": true, "required": true, "additionalProperties": true},
		"array":   {"items": true, "minItems": true, "maxItems": true},
		"string":  {"pattern": true, "format": true},
		"number":  {"multipleOf": true, "minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true},
		"integer": {"multipleOf": true, "minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true},
		"boolean": {}, "null": {},
	}
	strictFormats = map[string]bool{"date-time": true, "time": true, "date": true, "duration": true, "email": true,
		"hostname": true, "ipv4": true, "ipv6": true, "uuid": true}
)

func (c *strictCheck) node(n map[string]any, path []string, depth int) error {
	where := "In context=(" + strings.Join(path, ", ") + "), "
	if depth > 10 {
		return fmt.Errorf("%sthe schema is nested more than 10 levels deep", where)
	}
	types, err := typesOf(n)
	if err != nil {
		return fmt.Errorf("%s%v", where, err)
	}
	allowed := map[string]bool{}
	for k := range strictCommon {
		allowed[k] = true
	}
	for _, t := range types {
		kw, ok := strictByType[t]
		if !ok {
			return fmt.Errorf("%stype '%s' is not permitted", where, t)
		}
		for k := range kw {
			allowed[k] = true
		}
	}
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !allowed[k] {
			return fmt.Errorf("%s'%s' is not permitted", where, k)
		}
	}
	if f, ok := n["format"].(string); ok && !strictFormats[f] {
		return fmt.Errorf("%sformat '%s' is not permitted", where, f)
	}
	if e, ok := n["enum"].([]any); ok {
		c.enums += len(e)
		for _, v := range e {
			if s, ok := v.(string); ok {
				c.chars += len(s)
			}
		}
	}
	if s, ok := n["const"].(string); ok {
		c.chars += len(s)
	}
	if contains(types, "object") {
		if n["additionalProperties"] != false {
			return fmt.Errorf("%s'additionalProperties' is required to be supplied and to be false", where)
		}
		props, _ := n["properties"].(map[string]any)
		req := map[string]bool{}
		list, _ := n["required"].([]any)
		for _, r := range list {
			s, _ := r.(string)
			req[s] = true
		}
		names := make([]string, 0, len(props))
		for name := range props {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if !req[name] {
				return fmt.Errorf("%s'required' is required to be supplied and to be an array including every key in properties. Missing '%s'", where, name)
			}
			c.properties++
			c.chars += len(name)
			p, ok := props[name].(map[string]any)
			if !ok {
				return fmt.Errorf("%sproperty '%s' is not a schema", where, name)
			}
			if err := c.node(p, append(path, "'properties'", "'"+name+"'"), depth+1); err != nil {
				return err
			}
		}
		if len(req) != len(props) {
			return fmt.Errorf("%s'required' names a key that is not in properties", where)
		}
	}
	if items, ok := n["items"].(map[string]any); ok {
		if err := c.node(items, append(path, "'items'"), depth+1); err != nil {
			return err
		}
	}
	if list, ok := n["anyOf"].([]any); ok {
		for i, s := range list {
			m, ok := s.(map[string]any)
			if !ok {
				return fmt.Errorf("%sanyOf[%d] is not a schema", where, i)
			}
			if err := c.node(m, append(path, "'anyOf'", fmt.Sprint(i)), depth+1); err != nil {
				return err
			}
		}
	}
	for _, defsKey := range []string{"$defs", "definitions"} {
		defs, _ := n[defsKey].(map[string]any)
		for name, d := range defs {
			c.chars += len(name)
			m, ok := d.(map[string]any)
			if !ok {
				return fmt.Errorf("%sdefinition '%s' is not a schema", where, name)
			}
			if err := c.node(m, append(path, "'"+defsKey+"'", "'"+name+"'"), depth); err != nil {
				return err
			}
		}
	}
	return nil
}

// typesOf is a node's types: its type or type list, none for an anyOf,
// enum, const or $ref alone.
func typesOf(n map[string]any) ([]string, error) {
	switch t := n["type"].(type) {
	case nil:
		for _, k := range []string{"anyOf", "enum", "const", "$ref"} {
			if _, ok := n[k]; ok {
				return nil, nil
			}
		}
		return nil, fmt.Errorf("schema must have a 'type' key")
	case string:
		return []string{t}, nil
	case []any:
		out := make([]string, 0, len(t))
		for _, x := range t {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("'type' must be a string or a list of strings")
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("'type' must be a string or a list of strings")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
