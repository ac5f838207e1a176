package service

import (
	"slices"
	"sort"
	"strings"

	"github.com/apprun/apprun/engine"
)

// The API is JSON-only and accepts no files: an input value that is a file
// (a base64 data: URI, or an object carrying file members) is refused with
// invalid_request on every surface. CreateRun checks it; the REST API also
// checks it while decoding, before the key, in the spec's order.

// fileKeys are object members that mark an uploaded-file value.
var fileKeys = []string{"filename", "file_id", "file_data", "file_url", "mime_type", "content_base64"}

// FileField finds a file value in v, naming its path from `path`.
func FileField(v any, path string) (string, bool) {
	switch t := v.(type) {
	case string:
		s := strings.ToLower(strings.TrimSpace(t))
		if strings.HasPrefix(s, "data:") && strings.Contains(s, ";base64,") {
			return path, true
		}
	case map[string]any:
		for k := range t {
			if slices.Contains(fileKeys, strings.ToLower(k)) {
				return path, true
			}
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if p, ok := FileField(t[k], path+"."+k); ok {
				return p, true
			}
		}
	case []any:
		for _, e := range t {
			if p, ok := FileField(e, path+"[]"); ok {
				return p, true
			}
		}
	}
	return "", false
}

// checkNoFiles is the rule as an error.
func checkNoFiles(input map[string]any) error {
	if path, ok := FileField(input, "input"); ok {
		return engine.Errorf(engine.CodeInvalidRequest, "%s is a file field; the API is JSON-only and does not accept files", path)
	}
	return nil
}
