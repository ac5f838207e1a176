package service_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/apprun/apprun/service"
)

// The API is JSON-only: an input value that is a file is refused, naming
// its path, on every surface (CreateRun checks it first).
func TestCheckNoFilesNamesTheFirstFileField(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, input, want string }{
		{"data URI", `{"proof_points":"data:application/pdf;base64,JVBERi0x"}`, "input.proof_points is a file field"},
		{"data URI, any case and space", `{"p":"  DATA:text/plain;BASE64,QQ=="}`, "input.p is a file field"},
		{"file object", `{"attachment":{"filename":"a.pdf","content":"..."}}`, "input.attachment is a file field"},
		{"nested in a list", `{"a":[{"b":{"file_id":"f1"}}]}`, "input.a[].b is a file field"},
		{"plain text", `{"a":"data without base64","b":{"name":"file"}}`, ""},
	} {
		var input map[string]any
		if err := json.Unmarshal([]byte(c.input), &input); err != nil {
			t.Fatal(err)
		}
		err := service.CheckNoFiles(input)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want none", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
