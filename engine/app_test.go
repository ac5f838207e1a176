package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/apprun/apprun/apps"
	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/inputschema"
)

func coldEmail(t testing.TB) *engine.App {
	t.Helper()
	c, err := engine.NewCatalog(inputschema.Compile, apps.Default()...)
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.Lookup(apps.ColdEmailSlug)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestColdEmailInputValidation(t *testing.T) {
	base := func(extra map[string]any) map[string]any {
		m := map[string]any{"product_description": "Acme", "target_role": "CFOs"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	cases := []struct {
		name      string
		input     map[string]any
		wantField string // "" = valid
	}{
		{"only the two required fields", base(nil), ""},
		{"every field", base(map[string]any{"value_proposition": "v", "proof_points": "p", "research_signals": "r",
			"cta_goal": "Meeting", "sequence_emails": "5 emails", "sender_context": "s", "interaction_language": "Chinese"}), ""},
		{"missing target_role", map[string]any{"product_description": "Acme"}, "target_role"},
		{"missing product_description", map[string]any{"target_role": "CFOs"}, "product_description"},
		{"empty required field", base(map[string]any{"target_role": ""}), "target_role"},
		{"wrong type", base(map[string]any{"product_description": 42}), "product_description"},
		{"cta_goal outside its values", base(map[string]any{"cta_goal": "Demo"}), "cta_goal"},
		{"sequence_emails outside its values", base(map[string]any{"sequence_emails": "6 emails"}), "sequence_emails"},
		{"interaction_language outside its values", base(map[string]any{"interaction_language": "French"}), "interaction_language"},
		{"short_text too long", base(map[string]any{"target_role": strings.Repeat("x", 501)}), "target_role"},
		{"long_text too long", base(map[string]any{"proof_points": strings.Repeat("x", 4001)}), "proof_points"},
		{"unknown field", base(map[string]any{"tone": "warm"}), "tone"},
	}
	app := coldEmail(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := app.ValidateInput(c.input)
			if c.wantField == "" {
				if err != nil {
					t.Fatalf("valid input refused: %v", err)
				}
				return
			}
			if engine.ErrorCode(err) != engine.CodeInvalidInput {
				t.Fatalf("err = %v, want invalid_input", err)
			}
			if !strings.Contains(err.Error(), c.wantField) {
				t.Fatalf("message %q does not name the field %q", err.Error(), c.wantField)
			}
		})
	}
}

func TestValidateInputFillsDefaults(t *testing.T) {
	in, err := coldEmail(t).ValidateInput(map[string]any{"product_description": "Acme", "target_role": "CFOs"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"cta_goal": "Interest check", "sequence_emails": "3 emails", "interaction_language": "English"}
	for k, v := range want {
		if in[k] != v {
			t.Errorf("%s = %v, want default %v", k, in[k], v)
		}
	}
}

func FuzzValidateInput(f *testing.F) {
	for _, s := range []string{`{"product_description":"a","target_role":"b"}`, `{}`, `{"cta_goal":"Meeting"}`,
		`{"product_description":{"x":1},"target_role":[1,2]}`, `{"sequence_emails":"3 emails","target_role":"` + strings.Repeat("é", 600) + `"}`} {
		f.Add([]byte(s))
	}
	app := coldEmail(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var input map[string]any
		if json.Unmarshal(data, &input) != nil || input == nil {
			return
		}
		out, err := app.ValidateInput(input)
		if err != nil {
			if engine.ErrorCode(err) != engine.CodeInvalidInput || err.Error() == "" {
				t.Fatalf("refusal is not a clear invalid_input: %v", err)
			}
			return
		}
		for _, k := range []string{"product_description", "target_role"} {
			if s, ok := out[k].(string); !ok || s == "" {
				t.Fatalf("accepted input without %s: %s", k, data)
			}
		}
	})
}

// An invalid input's failing fields are data on the error, each with its
// path, rule and words: the website puts each beside its field without
// reading the message, which says the same for the API.
func TestInvalidInputNamesEachFieldAsData(t *testing.T) {
	t.Parallel()
	app := engine.App{Slug: "f", Name: "f", Price: 1, Runnable: true,
		InputSchema: []byte(`{"type":"object","required":["a"],"properties":{"a":{"type":"string"},"b":{"type":"string","maxLength":3}},"additionalProperties":false}`),
		Executor: engine.Executor(func(context.Context, engine.Job, func(engine.Step)) (engine.Result, error) {
			return engine.Result{}, nil
		})}
	c, err := engine.NewCatalog(inputschema.Compile, app)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.Lookup("f")
	_, err = a.ValidateInput(map[string]any{"a": "ok", "b": "too long"})
	var e *engine.Error
	if !errors.As(err, &e) || e.Code != engine.CodeInvalidInput || len(e.Fields) != 1 {
		t.Fatalf("a field too long: %#v", err)
	}
	if f := e.Fields[0]; f.Field != "input.b" || f.Name() != "b" || f.Code != "maxLength" || f.Message == "" {
		t.Fatalf("its field error: %+v", f)
	}
	if e.Message != "input.b: "+e.Fields[0].Message {
		t.Fatalf("its message %q does not say what its fields say", e.Message)
	}
	_, err = a.ValidateInput(map[string]any{"b": "x"})
	if !errors.As(err, &e) || len(e.Fields) != 1 || e.Fields[0].Field != "input" || e.Fields[0].Name() != "" || e.Fields[0].Code != "required" {
		t.Fatalf("a required field missing: %#v", err)
	}
}
