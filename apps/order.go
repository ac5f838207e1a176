package apps

import (
	"bytes"
	"encoding/json"
	"slices"
)

// orderedJSON encodes v with each object's members in the order its
// schema declares them (properties, recursively through items), members
// the schema does not name after them in name order: a landing page
// starts with its hero, not with "benefits" (issue 47). Go's encoder
// sorts a map's members, and a run's output is kept as encoded here.
func orderedJSON(v any, schema json.RawMessage) (json.RawMessage, error) {
	var b bytes.Buffer
	if err := writeOrdered(&b, v, schema); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeOrdered(b *bytes.Buffer, v any, schema json.RawMessage) error {
	var s struct {
		Properties json.RawMessage `json:"properties"`
		Items      json.RawMessage `json:"items"`
	}
	if len(schema) > 0 {
		_ = json.Unmarshal(schema, &s) // a schema that is not an object orders nothing
	}
	switch x := v.(type) {
	case map[string]any:
		names, subs := declared(s.Properties)
		var rest []string
		for k := range x {
			if !slices.Contains(names, k) {
				rest = append(rest, k)
			}
		}
		slices.Sort(rest)
		b.WriteByte('{')
		first := true
		for i, k := range append(names, rest...) {
			val, ok := x[k]
			if !ok {
				continue
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			key, _ := json.Marshal(k)
			b.Write(key)
			b.WriteByte(':')
			var sub json.RawMessage
			if i < len(subs) {
				sub = subs[i]
			}
			if err := writeOrdered(b, val, sub); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeOrdered(b, e, s.Items); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	}
	data, err := json.Marshal(v)
	b.Write(data)
	return err
}

// declared lists the members of a properties object in document order,
// with their schemas.
func declared(props json.RawMessage) (names []string, schemas []json.RawMessage) {
	if len(props) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(props))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return names, schemas
		}
		var sub json.RawMessage
		if err := dec.Decode(&sub); err != nil {
			return names, schemas
		}
		names, schemas = append(names, t.(string)), append(schemas, sub)
	}
	return names, schemas
}
