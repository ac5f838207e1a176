package web

import (
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"slices"
	"sort"
	"strings"
)

// renderOutput renders an App's output readably, driven by its output
// schema: an object's members become headed sections in the schema's
// order, a list of words a list, a list of small flat objects a table
// (cards on a phone), a list of larger objects cards, and long text a
// block with a copy button. Every value is escaped: the output is data
// from a model.
func renderOutput(value any, schema json.RawMessage) template.HTML {
	r := &renderer{}
	r.value(value, schema, 3)          // under the page's h2
	return template.HTML(r.b.String()) // #nosec: every value above is escaped
}

type renderer struct {
	b  strings.Builder
	id int
}

// sub is the schema of one member or of an array's items.
func sub(schema json.RawMessage, key string) json.RawMessage {
	var s map[string]json.RawMessage
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	if key == "items" {
		return s["items"]
	}
	var props map[string]json.RawMessage
	_ = json.Unmarshal(s["properties"], &props)
	return props[key]
}

// keys lists an object's members: the schema's order first, then the rest
// sorted.
func keys(m map[string]any, schema json.RawMessage) []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range propertyOrder(schema) {
		if _, ok := m[k]; ok && !seen[k] {
			out, seen[k] = append(out, k), true
		}
	}
	var rest []string
	for k := range m {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// words is a JSON member name for people: "cta_goal" → "Cta goal".
func words(key string) string {
	parts := strings.Split(key, "_")
	for i, p := range parts {
		if acronyms[p] {
			parts[i] = strings.ToUpper(p)
		}
	}
	w := strings.Join(parts, " ")
	if w == "" {
		return w
	}
	return strings.ToUpper(w[:1]) + w[1:]
}

// acronyms are the words of output keys read as letters.
var acronyms = map[string]bool{"cta": true, "seo": true, "faq": true, "url": true, "api": true, "icp": true, "pr": true, "ai": true,
	"b2b": true, "b2c": true, "crm": true, "roi": true, "kpi": true, "ux": true, "ui": true, "id": true, "utm": true, "ps": true}

func scalar(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return false
	}
	return true
}

func text(v any) string {
	switch t := v.(type) {
	case nil:
		return "—"
	case bool:
		if t {
			return "Yes"
		}
		return "No"
	case float64:
		return fmt.Sprintf("%g", t)
	}
	return fmt.Sprint(v)
}

func (r *renderer) value(v any, schema json.RawMessage, level int) {
	e := html.EscapeString
	switch t := v.(type) {
	case map[string]any:
		for _, k := range keys(t, schema) {
			child := t[k]
			if scalar(child) && len(text(child)) <= 80 {
				fmt.Fprintf(&r.b, `<p class="field-line"><strong>%s:</strong> %s</p>`, e(words(k)), e(text(child)))
				continue
			}
			h := min(level, 6)
			fmt.Fprintf(&r.b, `<section class="out"><h%d>%s</h%d>`, h, e(words(k)), h)
			r.value(child, sub(schema, k), level+1)
			r.b.WriteString(`</section>`)
		}
	case []any:
		r.list(t, sub(schema, "items"), level)
	default:
		s := text(t)
		if len(s) > 80 {
			r.id++
			fmt.Fprintf(&r.b, `<div class="copyrow"><div class="text block" id="out-%d">%s</div><button type="button" data-copy="#out-%d">Copy</button></div>`, r.id, e(s), r.id)
			return
		}
		fmt.Fprintf(&r.b, `<p class="text">%s</p>`, e(s))
	}
}

func (r *renderer) list(items []any, schema json.RawMessage, level int) {
	e := html.EscapeString
	if len(items) == 0 {
		r.b.WriteString(`<p class="hint">None.</p>`)
		return
	}
	allScalar, flat := true, true
	var cols []string
	for _, it := range items {
		m, isMap := it.(map[string]any)
		allScalar = allScalar && scalar(it)
		if !isMap {
			flat = false
			continue
		}
		for _, k := range keys(m, schema) {
			if !scalar(m[k]) || len(text(m[k])) > 120 {
				flat = false
			}
			if !slices.Contains(cols, k) {
				cols = append(cols, k)
			}
		}
	}
	switch {
	case allScalar:
		r.b.WriteString(`<ul class="out-list">`)
		for _, it := range items {
			fmt.Fprintf(&r.b, `<li>%s</li>`, e(text(it)))
		}
		r.b.WriteString(`</ul>`)
	case flat && len(cols) <= 5:
		r.b.WriteString(`<table class="stack-on-phone"><thead><tr>`)
		for _, c := range cols {
			fmt.Fprintf(&r.b, `<th scope="col">%s</th>`, e(words(c)))
		}
		r.b.WriteString(`</tr></thead><tbody>`)
		for _, it := range items {
			m, _ := it.(map[string]any)
			r.b.WriteString(`<tr>`)
			for _, c := range cols {
				fmt.Fprintf(&r.b, `<td data-label="%s">%s</td>`, e(words(c)), e(text(m[c])))
			}
			r.b.WriteString(`</tr>`)
		}
		r.b.WriteString(`</tbody></table>`)
	default:
		// A card that holds a table of its own needs the full width.
		if holdsTable(items) {
			r.b.WriteString(`<div class="cards wide">`)
		} else {
			r.b.WriteString(`<div class="cards">`)
		}
		for _, it := range items {
			r.b.WriteString(`<div class="card">`)
			r.value(it, schema, level) // the list has no heading of its own: no level skipped
			r.b.WriteString(`</div>`)
		}
		r.b.WriteString(`</div>`)
	}
}

// holdsTable reports whether an item of the list has a list of objects.
func holdsTable(items []any) bool {
	for _, it := range items {
		m, _ := it.(map[string]any)
		for _, v := range m {
			if l, ok := v.([]any); ok && len(l) > 0 {
				if _, obj := l[0].(map[string]any); obj {
					return true
				}
			}
		}
	}
	return false
}
