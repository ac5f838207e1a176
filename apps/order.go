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
func orderedJSON(v any, sh *outputShape) (json.RawMessage, error) {
	var b bytes.Buffer
	if err := writeOrdered(&b, v, sh); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// outputShape is what of an output schema orders a value and reads a
// strict reply: its properties in document order, each with its own
// shape, its items' shape, and which members may be left out. It is read
// once, when the definition is checked.
type outputShape struct {
	names []string
	props map[string]*outputShape
	items *outputShape
	// optional are the members neither required nor taking null: a
	// strict reply's null for one of them means "left out".
	optional map[string]bool
	// nullable is whether this schema's type takes null.
	nullable bool
}

// shapeOf reads schema's shape; nil when schema orders nothing.
func shapeOf(schema json.RawMessage) *outputShape {
	var s struct {
		Properties json.RawMessage `json:"properties"`
		Items      json.RawMessage `json:"items"`
		Required   []string        `json:"required"`
		Type       json.RawMessage `json:"type"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil { // a schema that is not an object orders nothing
		return nil
	}
	var types []string
	if json.Unmarshal(s.Type, &types) != nil {
		var one string
		_ = json.Unmarshal(s.Type, &one)
		types = []string{one}
	}
	sh := &outputShape{props: map[string]*outputShape{}, items: shapeOf(s.Items), optional: map[string]bool{},
		nullable: slices.Contains(types, "null")}
	defer func() {
		for _, name := range sh.names {
			if p := sh.props[name]; !slices.Contains(s.Required, name) && (p == nil || !p.nullable) {
				sh.optional[name] = true
			}
		}
	}()
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

// dropNulls removes, in v, every member that is null where the shape
// says it may be left out: how a strict reply (llm.StrictSchema makes
// optional members required and nullable) says it left one out. v is
// changed in place.
func (sh *outputShape) dropNulls(v any) {
	if sh == nil {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if val == nil && sh.optional[k] {
				delete(x, k)
				continue
			}
			sh.props[k].dropNulls(val)
		}
	case []any:
		for _, e := range x {
			sh.items.dropNulls(e)
		}
	}
}
