package apps

import (
	"encoding/json"
	"testing"
)

func TestOutputMembersKeepTheSchemasOrder(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","properties":{"hero":{"type":"object","properties":{"headline":{},"sub":{}}},
		"benefits":{"type":"array","items":{"type":"object","properties":{"title":{},"body":{}}}},"cta":{}}}`)
	var out map[string]any
	_ = json.Unmarshal([]byte(`{"cta":"Go","zeta":1,"alpha":2,"benefits":[{"body":"b","title":"t","x":"<&>"}],"hero":{"sub":"s","headline":"h"}}`), &out)
	got, err := orderedJSON(out, schema)
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
