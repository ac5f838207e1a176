package inputschema

import (
	"encoding/json"
	"fmt"
	"testing"
)

// A schema text is compiled once a process; a different text is its own
// schema, a text that does not compile is refused every time, and what is
// kept is bounded.
func TestASchemaTextIsCompiledOnce(t *testing.T) {
	text := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","default":3}},"required":[]}`)
	a, err := Compile(text)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Compile(append(json.RawMessage(nil), text...))
	if err != nil {
		t.Fatal(err)
	}
	if a.(schema).s != b.(schema).s {
		t.Fatal("the same schema text was compiled twice")
	}
	if out, errs := b.Check(map[string]any{}); len(errs) > 0 || fmt.Sprint(out["n"]) != "3" {
		t.Fatalf("the kept schema checks: %v %v", out, errs)
	}
	other, err := Compile(json.RawMessage(`{"type":"object","required":["x"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if other.(schema).s == a.(schema).s {
		t.Fatal("two schema texts share one compiled schema")
	}
	if _, errs := other.Check(map[string]any{}); len(errs) == 0 {
		t.Fatal("the other schema accepted an input without its required field")
	}
	for range 2 {
		if _, err := Compile(json.RawMessage(`{"type":`)); err == nil {
			t.Fatal("a schema that is not JSON compiled")
		}
	}
	for i := range maxCompiled + 10 {
		if _, err := Compile(json.RawMessage(fmt.Sprintf(`{"type":"object","title":"s%d"}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	compiled.Lock()
	n := len(compiled.byText)
	compiled.Unlock()
	if n > maxCompiled {
		t.Fatalf("%d compiled schemas kept, at most %d", n, maxCompiled)
	}
}
