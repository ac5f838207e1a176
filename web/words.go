package web

import (
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"strings"
)

// nameBreaks is a JSON member name that a narrow column may break after
// its underscores and nowhere else ("key_points", not "key_poin ts").
func nameBreaks(name string) template.HTML {
	return template.HTML(strings.ReplaceAll(html.EscapeString(name), "_", "_<wbr>")) // #nosec: escaped above
}

// inputText is one input value for people: a yes/no in words, a list
// joined with commas, a number as written; never Go's formatting.
func inputText(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case []any:
		parts := make([]string, len(t))
		for i, e := range t {
			parts[i] = inputText(e)
		}
		return strings.Join(parts, ", ")
	case map[string]any:
		b, _ := json.Marshal(t)
		return string(b)
	case bool, nil, float64:
		return text(t)
	}
	return fmt.Sprint(v)
}
