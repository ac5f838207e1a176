package httpapi

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apprun/apprun/engine"
)

func TestDecodeCreateRun(t *testing.T) {
	cases := []struct {
		name    string
		body    string
		wantErr string // substring of the invalid_request message; "" = accepted
	}{
		{"minimal", `{"app_slug":"cold-email-writer","input":{}}`, ""},
		{"with brand context", `{"app_slug":"x","input":{},"brand_context_id":"bc_abc"}`, ""},
		{"null brand context is absent", `{"app_slug":"x","input":{},"brand_context_id":null}`, ""},
		{"not JSON", `app_slug=x`, "not valid JSON"},
		{"empty", ``, "empty"},
		{"array", `[1,2]`, "expected an object"},
		{"null", `null`, "must be a JSON object"},
		{"two objects", `{"app_slug":"x","input":{}} {}`, "exactly one"},
		{"missing app_slug", `{"input":{}}`, "app_slug is required"},
		{"app_slug not a string", `{"app_slug":7,"input":{}}`, "app_slug must be a string"},
		{"missing input", `{"app_slug":"x"}`, "input is required"},
		{"input not an object", `{"app_slug":"x","input":"hi"}`, "input must be a JSON object"},
		{"input array", `{"app_slug":"x","input":[]}`, "input must be a JSON object"},
		{"unknown top-level field", `{"app_slug":"x","input":{},"priority":1}`, "unknown field(s) priority"},
		{"brand_context_id not a string", `{"app_slug":"x","input":{},"brand_context_id":5}`, "brand_context_id must be a string"},
		// A proxy that reads the first of two same-named members sees
		// another request than the one that would run.
		{"duplicate top-level member", `{"app_slug":"nope","app_slug":"test-sleep","input":{}}`, `duplicate member "app_slug"`},
		{"duplicate nested member", `{"app_slug":"x","input":{"a":{"ms":1,"ms":2}}}`, `duplicate member "ms" at /input/a`},
		{"same name in sibling objects", `{"app_slug":"x","input":{"a":{"n":1},"b":{"n":2}}}`, ""},
		// JSON is UTF-8; encoding/json would decode these bytes as U+FFFD.
		{"a Latin-1 byte", "{\"app_slug\":\"x\",\"input\":{\"a\":\"caf\xe9\"}}", "not valid UTF-8 (byte 33)"},
		{"a lone continuation byte", "{\"app_slug\":\"x\",\"input\":{\"\x80\":1}}", "not valid UTF-8 (byte 26)"},
		{"an encoded surrogate", "{\"app_slug\":\"x\",\"input\":{\"a\":\"\xed\xa0\x80\"}}", "not valid UTF-8 (byte 30)"},
		{"escaped and multibyte text", `{"app_slug":"x","input":{"a":"caf\u00e9 café 中 😀"}}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obj, err := decodeObject([]byte(c.body))
			if err == nil {
				_, err = decodeCreateRun(obj)
			}
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if engine.ErrorCode(err) != engine.CodeInvalidRequest || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err = %v, want invalid_request containing %q", err, c.wantErr)
			}
		})
	}
}

func FuzzDecodeCreateRun(f *testing.F) {
	for _, s := range []string{`{"app_slug":"cold-email-writer","input":{"product_description":"a","target_role":"b"}}`,
		`{"app_slug":"x","input":{"f":"data:;base64,AA=="}}`, `{"app_slug":1}`, `[]`, `{"input":{"a":{"b":{"c":[null,{"filename":1}]}}}}`, "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		obj, err := decodeObject(body)
		if err == nil {
			var b createRunBody
			b, err = decodeCreateRun(obj)
			if err == nil {
				if b.AppSlug == "" || b.Input == nil {
					t.Fatalf("accepted a body without app_slug or input: %q", body)
				}
				if !utf8.Valid(body) {
					t.Fatalf("accepted a body that is not UTF-8: %q", body)
				}
				return
			}
		}
		if engine.ErrorCode(err) != engine.CodeInvalidRequest {
			t.Fatalf("refusal is not invalid_request: %v", err)
		}
	})
}
