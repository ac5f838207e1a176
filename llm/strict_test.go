package llm_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/apprun/apprun/llm"
	"github.com/apprun/apprun/llm/llmtest"
)

func TestStrictSchemaMakesOptionalMembersRequiredAndNullable(t *testing.T) {
	t.Parallel()
	in := json.RawMessage(`{"type":"object","required":["a"],"properties":{
		"a":{"type":"string","minLength":1,"maxLength":60,"description":"A title"},
		"b":{"type":"array","minItems":2,"items":{"type":"object","properties":{"x":{"type":"integer","minimum":1}}}},
		"c":{"type":"string","enum":["x","y"]},
		"d":{"anyOf":[{"type":"string"},{"type":"integer"}]}}}`)
	out, err := llm.StrictSchema(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := llmtest.CheckStrict(out); err != nil {
		t.Fatalf("converted schema breaks the strict rules: %v\n%s", err, out)
	}
	var got map[string]any
	_ = json.Unmarshal(out, &got)
	props := got["properties"].(map[string]any)
	a, b, c := props["a"].(map[string]any), props["b"].(map[string]any), props["c"].(map[string]any)
	if a["type"] != "string" || a["description"] != `A title Also: maxLength 60; minLength 1.` {
		t.Fatalf("a required member: %v", a)
	}
	if !reflect.DeepEqual(b["type"], []any{"array", "null"}) || !strings.Contains(b["description"].(string), "minItems 2") {
		t.Fatalf("an optional array: %v", b)
	}
	if !reflect.DeepEqual(c["enum"], []any{"x", "y", nil}) {
		t.Fatalf("an optional enum: %v", c)
	}
	if _, ok := props["d"].(map[string]any)["anyOf"]; !ok {
		t.Fatalf("an optional anyOf: %v", props["d"])
	}
	if _, err := llm.StrictSchema(json.RawMessage(`{"type":"array"}`)); err == nil {
		t.Fatal("a root that is not an object was converted")
	}
}

// The checker itself fails what OpenAI refuses.
func TestCheckStrictRefusesWhatOpenAIRefuses(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{
		`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`,
		`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string"}},"required":[]}`,
		`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string","minLength":1}},"required":["a"]}`,
		`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string","default":"x"}},"required":["a"]}`,
		`{"anyOf":[{"type":"object"}]}`,
		`{"type":"array","items":{"type":"string"}}`,
		`{"type":"object","additionalProperties":false,"properties":{"a":{"oneOf":[{"type":"string"}]}},"required":["a"]}`,
	} {
		if llmtest.CheckStrict(json.RawMessage(bad)) == nil {
			t.Errorf("CheckStrict passed %s", bad)
		}
	}
}
