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
	if err := writeOrdered(&b, v, shapeOf(schema)); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// outputShape is what of a schema orders a value: its properties in document
// order, each with its own shape, and its items' shape. It is read once
// an output, not once an array element.
type outputShape struct {
	names []string
	props map[string]*outputShape
	items *outputShape
}

// shapeOf reads schema's shape; nil when schema orders nothing.
func shapeOf(schema json.RawMessage) *outputShape {
	var s struct {
		Properties json.RawMessage `json:"properties"`
		Items      json.RawMessage `json:"items"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil { // a schema that is not an object orders nothing
		return nil
	}
	sh := &outputShape{props: map[string]*outputShape{}, items: shapeOf(s.Items)}
	if len(s.Properties) == 0 {
		return sh
	}
	dec := json.NewDecoder(bytes.NewReader(s.Properties))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return sh
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return sh
		}
		var sub json.RawMessage
		if err := dec.Decode(&sub); err != nil {
			return sh
		}
		name := t.(string)
		sh.names = append(sh.names, name)
		sh.props[name] = shapeOf(sub)
	}
	return sh
}

func writeOrdered(b *bytes.Buffer, v any, sh *outputShape) error {
	if sh == nil {
		sh = &outputShape{}
	}
	switch x := v.(type) {
	case map[string]any:
		var rest []string
		for k := range x {
			if _, ok := sh.props[k]; !ok {
				rest = append(rest, k)
			}
		}
		slices.Sort(rest)
		b.WriteByte('{')
		first := true
		for _, k := range append(slices.Clip(sh.names), rest...) {
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
			if err := writeOrdered(b, val, sh.props[k]); err != nil {
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
			if err := writeOrdered(b, e, sh.items); err != nil {
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
