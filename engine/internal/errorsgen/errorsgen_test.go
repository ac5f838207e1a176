package errorsgen

import (
	"strings"
	"testing"
)

// A table errorsgen would make a wrong file of is refused, with the reason.
func TestParseRefusesABadTable(t *testing.T) {
	t.Parallel()
	const good = `{"constant":"CodeFoo","code":"foo","status":404,"message":"no foo","anchor":"foo"}`
	if _, err := Parse([]byte("[" + good + "]")); err != nil {
		t.Fatalf("a good table: %v", err)
	}
	for name, tc := range map[string]struct{ table, want string }{
		"empty":          {`[]`, "no entries"},
		"unknown field":  {`[{"constant":"CodeFoo","code":"foo","status":404,"message":"m","anchor":"foo","http":404}]`, "unknown field"},
		"no status":      {`[{"constant":"CodeFoo","code":"foo","message":"m","anchor":"foo"}]`, "status 0"},
		"a 200":          {`[{"constant":"CodeFoo","code":"foo","status":200,"message":"m","anchor":"foo"}]`, "status 200"},
		"no message":     {`[{"constant":"CodeFoo","code":"foo","status":404,"message":" ","anchor":"foo"}]`, "no default message"},
		"no anchor":      {`[{"constant":"CodeFoo","code":"foo","status":404,"message":"m"}]`, "anchor"},
		"code case":      {`[{"constant":"CodeFoo","code":"Foo","status":404,"message":"m","anchor":"foo"}]`, "snake_case"},
		"constant":       {`[{"constant":"Foo","code":"foo","status":404,"message":"m","anchor":"foo"}]`, "Code<Name>"},
		"code twice":     {`[` + good + `,{"constant":"CodeBar","code":"foo","status":404,"message":"m","anchor":"bar"}]`, `code "foo"`},
		"constant twice": {`[` + good + `,{"constant":"CodeFoo","code":"bar","status":404,"message":"m","anchor":"bar"}]`, `constant "CodeFoo"`},
		"anchor twice":   {`[` + good + `,{"constant":"CodeBar","code":"bar","status":404,"message":"m","anchor":"foo"}]`, `anchor "foo"`},
		"two values":     {`[` + good + `] []`, "more than one"},
	} {
		_, err := Parse([]byte(tc.table))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, tc.want)
		}
	}
}
