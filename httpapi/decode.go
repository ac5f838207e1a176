package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/apprun/apprun/engine"
	"github.com/go-json-experiment/json/jsontext"
)

// maxBody is the largest request body accepted.
const maxBody = 1 << 20

// readJSONObject reads a request body that must be one JSON object sent as
// application/json, at most 1 MiB, and returns its members. Every failure is
// invalid_request (spec rule 1).
func readJSONObject(w http.ResponseWriter, r *http.Request) (map[string]json.RawMessage, error) {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	switch {
	case ct == "":
		return nil, errorf(engine.CodeInvalidRequest, "Content-Type must be application/json")
	case err == nil && strings.HasPrefix(mt, "multipart/"):
		return nil, errorf(engine.CodeInvalidRequest, "file uploads are not accepted; send a JSON body with Content-Type application/json")
	case err != nil || mt != "application/json":
		return nil, errorf(engine.CodeInvalidRequest, "Content-Type must be application/json, not %q", ct)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, errorf(engine.CodeInvalidRequest, "request body exceeds %d bytes", maxBody)
		}
		return nil, errorf(engine.CodeInvalidRequest, "could not read the request body")
	}
	return decodeObject(body)
}

// decodeObject parses body as exactly one JSON object.
func decodeObject(body []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	var obj map[string]json.RawMessage
	if err := dec.Decode(&obj); err != nil {
		return nil, errorf(engine.CodeInvalidRequest, "body is not valid JSON: %s", jsonProblem(err))
	}
	if obj == nil {
		return nil, errorf(engine.CodeInvalidRequest, "body must be a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errorf(engine.CodeInvalidRequest, "body must hold exactly one JSON object")
	}
	if err := jsonText(body); err != nil {
		return nil, err
	}
	return obj, nil
}

// jsonText refuses what a JSON body must not hold though encoding/json
// decodes it: bytes that are not UTF-8 (RFC 8259 §8.1; encoding/json puts
// U+FFFD in their place, so what would run is not what was sent) and, at
// any depth, an object naming a member twice (encoding/json keeps the last
// one, while a proxy or a WAF in front may read the first, and then see
// another request than the one that runs). Both are found in one read by
// jsontext (the Go team's JSON v2 work), which rejects them as RFC 7493
// asks. The API's bodies and MCP's messages are both checked by it.
func jsonText(body []byte) error {
	_, err := jsontext.NewDecoder(bytes.NewReader(body)).ReadValue()
	var se *jsontext.SyntacticError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se) && errors.Is(se.Err, jsontext.ErrDuplicateName):
		name := se.JSONPointer.LastToken()
		if at := string(se.JSONPointer.Parent()); at != "" {
			return errorf(engine.CodeInvalidRequest, "duplicate member %q at %s in the JSON body", name, at)
		}
		return errorf(engine.CodeInvalidRequest, "duplicate member %q in the JSON body", name)
	case !utf8.Valid(body): // jsontext's own error for it is not exported
		return errorf(engine.CodeInvalidRequest, "body is not valid UTF-8 (byte %d); JSON is UTF-8", invalidUTF8At(body))
	}
	return nil // anything else is judged by the caller's decode
}

// invalidUTF8At is the offset of the first byte of body that is not UTF-8.
func invalidUTF8At(body []byte) int {
	for i := 0; i < len(body); {
		r, n := utf8.DecodeRune(body[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(body)
}

func jsonProblem(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return syn.Error()
	case errors.As(err, &typ):
		return "expected an object"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "body is empty or cut short"
	}
	return "malformed"
}

// onlyFields refuses members other than allowed.
func onlyFields(obj map[string]json.RawMessage, allowed ...string) error {
	var unknown []string
	for k := range obj {
		if !contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return errorf(engine.CodeInvalidRequest, "unknown field(s) %s; allowed: %s", strings.Join(unknown, ", "), strings.Join(allowed, ", "))
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// stringField decodes an optional string member; present reports whether
// it was there and not null.
func stringField(obj map[string]json.RawMessage, name string) (value string, present bool, err error) {
	raw, ok := obj[name]
	if !ok || string(raw) == "null" {
		return "", false, nil
	}
	if err := json.Unmarshal(raw, &value); err != nil {
		return "", false, errorf(engine.CodeInvalidRequest, "%s must be a string", name)
	}
	return value, true, nil
}
