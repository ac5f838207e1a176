package apps

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestOutputMembersKeepTheSchemasOrder(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","properties":{"hero":{"type":"object","properties":{"headline":{},"sub":{}}},
		"benefits":{"type":"array","items":{"type":"object","properties":{"title":{},"body":{}}}},"cta":{}}}`)
	var out map[string]any
	_ = json.Unmarshal([]byte(`{"cta":"Go","zeta":1,"alpha":2,"benefits":[{"body":"b","title":"t","x":"<&>"}],"hero":{"sub":"s","headline":"h"}}`), &out)
	got, err := orderedJSON(out, shapeOf(schema))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"hero":{"headline":"h","sub":"s"},"benefits":[{"title":"t","body":"b","x":"\u003c\u0026\u003e"}],"cta":"Go","alpha":2,"zeta":1}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if plain, _ := orderedJSON(out, nil); string(plain) != func() string { b, _ := json.Marshal(out); return string(b) }() {
		t.Fatalf("without a schema: %s, want encoding/json's order", plain)
	}
}

// A strict reply's null for a member the schema lets it leave out is
// dropped; a null the schema takes, or for a required member, is kept
// (and then checked), at every depth.
func TestDropNullsLeavesWhatTheSchemaTakes(t *testing.T) {
	t.Parallel()
	sh := shapeOf(json.RawMessage(`{"type":"object","required":["a"],"properties":{"a":{"type":["string","null"]},"b":{"type":"string"},
		"c":{"type":["integer","null"]},"list":{"type":"array","items":{"type":"object","properties":{"x":{"type":"string"}}}}}}`))
	v := map[string]any{"a": nil, "b": nil, "c": nil, "list": []any{map[string]any{"x": nil}}}
	sh.dropNulls(v)
	want := map[string]any{"a": nil, "c": nil, "list": []any{map[string]any{}}}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("got %v, want %v", v, want)
	}
}
