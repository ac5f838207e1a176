package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// param is one input parameter of an App, read from its input schema: a
// row of the reference table and a field of the run form.
type param struct {
	Name        string
	Title       string // the schema's title, if it has one
	Example     string // the schema's first example, shown as a placeholder
	Type        string
	Description string
	MinLength   int
	Required    bool
	Enum        []string
	Default     string
	MaxLength   int
	Minimum     *float64
	Maximum     *float64
	Format      string
	Pattern     string
}

// Field is the form control the parameter gets.
func (p param) Field() string {
	switch {
	case len(p.Enum) > 0:
		return "select"
	case p.Type == "boolean":
		return "checkbox"
	case p.Type == "integer" || p.Type == "number":
		return "number"
	case p.Format == "uri":
		return "text" // an address is one line (an <input type="url">)
	case p.Type == "string" && (p.MaxLength == 0 || p.MaxLength > 300):
		return "textarea"
	default:
		return "text"
	}
}

// Label is the field's name for people: its title, else its name in
// words ("product_description" → "Product description").
func (p param) Label() string {
	if p.Title != "" {
		return p.Title
	}
	return words(p.Name)
}

// DefaultText is the default for the table: a yes/no one in words.
func (p param) DefaultText() string {
	switch p.Default {
	case "true":
		return "Yes"
	case "false":
		return "No"
	}
	return p.Default
}

// Allowed describes the values a parameter takes, for the table.
func (p param) Allowed() string {
	switch {
	case len(p.Enum) > 0:
		return strings.Join(quoteAll(p.Enum), ", ")
	case p.Minimum != nil && p.Maximum != nil:
		return fmt.Sprintf("%g to %g", *p.Minimum, *p.Maximum)
	case p.Format == "uri":
		return "a URL"
	case p.Pattern != "" && strings.Contains(p.Pattern, "github"):
		return "a GitHub repository URL"
	}
	return ""
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = strconv.Quote(v)
	}
	return out
}

// params reads the top-level properties of an input schema in the order
// the schema lists them.
func params(schema []byte) ([]param, error) {
	var s struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, err
	}
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	var out []param
	for _, name := range propertyOrder(schema) {
		var p struct {
			Type        any      `json:"type"`
			Title       string   `json:"title"`
			Examples    []any    `json:"examples"`
			MinLength   int      `json:"minLength"`
			Description string   `json:"description"`
			Enum        []any    `json:"enum"`
			Default     any      `json:"default"`
			MaxLength   int      `json:"maxLength"`
			Minimum     *float64 `json:"minimum"`
			Maximum     *float64 `json:"maximum"`
			Format      string   `json:"format"`
			Pattern     string   `json:"pattern"`
		}
		if err := json.Unmarshal(s.Properties[name], &p); err != nil {
			return nil, fmt.Errorf("property %s: %w", name, err)
		}
		t, _ := p.Type.(string)
		if t == "" && len(p.Enum) > 0 {
			t = "string"
		}
		q := param{Name: name, Title: p.Title, Type: t, Description: p.Description, Required: required[name], MaxLength: p.MaxLength,
			MinLength: p.MinLength, Minimum: p.Minimum, Maximum: p.Maximum, Format: p.Format, Pattern: p.Pattern}
		if len(p.Examples) > 0 {
			q.Example = fmt.Sprint(p.Examples[0])
		}
		for _, e := range p.Enum {
			q.Enum = append(q.Enum, fmt.Sprint(e))
		}
		if p.Default != nil {
			q.Default = fmt.Sprint(p.Default)
		}
		out = append(out, q)
	}
	return out, nil
}

// propertyOrder lists the keys of the schema's "properties" object in
// document order (a Go map would lose it).
func propertyOrder(schema []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(schema))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		if key != "properties" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return nil
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return nil
		}
		var names []string
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return names
			}
			names = append(names, fmt.Sprint(k))
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return names
			}
		}
		return names
	}
	return nil
}

// formInput turns a submitted run form into an App input: empty optional
// fields are left out, numbers and booleans take their types. What the
// schema then refuses is reported by the App's validation.
func formInput(ps []param, get func(string) (string, bool)) (map[string]any, error) {
	in := map[string]any{}
	for _, p := range ps {
		v, sent := get(p.Name)
		switch p.Field() {
		case "checkbox":
			if p.Default != "" || sent { // a checkbox sends nothing when unticked
				in[p.Name] = sent && v != ""
			}
			continue
		}
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		switch p.Type {
		case "integer":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: enter a whole number", p.Label())
			}
			in[p.Name] = n
		case "number":
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: enter a number", p.Label())
			}
			in[p.Name] = n
		default:
			in[p.Name] = strings.ReplaceAll(v, "\r\n", "\n")
		}
	}
	return in, nil
}
