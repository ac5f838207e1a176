package apps

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/kaptinlin/jsonschema"
)

// A model's reply is read tolerantly (a code fence or a sentence around
// the object is forgiven), then checked against the App's output schema.
// What is wrong with it is said twice: in words for the customer and the
// model (a repair sends them back), and as the parser or validator said
// it, for the failure's details.

// badReply is what is wrong with a reply.
type badReply struct {
	// problems are in words: "missing `hook`".
	problems []string
	// notJSON is set when the reply held no JSON object at all.
	notJSON bool
	details string
}

// words is the failure's message.
func (b *badReply) words() string {
	if b.notJSON {
		return "The model's reply was not the JSON object this App needs."
	}
	return "The model's reply did not match this App's output: " + listed(b.problems, 5) + "."
}

// short is the problem for a progress line.
func (b *badReply) short() string {
	if b.notJSON {
		return "it was not a JSON object"
	}
	return listed(b.problems, 2)
}

// maxToldProblems bounds the problems a repair call lists.
const maxToldProblems = 20

// repairMessage is what a repair call tells the model.
func (b *badReply) repairMessage() string {
	var m strings.Builder
	if b.notJSON {
		m.WriteString("Your reply was not one JSON object.")
	} else {
		m.WriteString("Your reply did not match the JSON Schema in your instructions:\n")
		for i, p := range b.problems {
			if i == maxToldProblems {
				fmt.Fprintf(&m, "- and %d more\n", len(b.problems)-i)
				break
			}
			m.WriteString("- " + p + "\n")
		}
	}
	m.WriteString("\nReply again with the whole corrected JSON object, matching the schema, and nothing else: no prose, no code fence.")
	return m.String()
}

// listed is the first n of list, joined, with how many more.
func listed(list []string, n int) string {
	if len(list) > n {
		return strings.Join(list[:n], "; ") + fmt.Sprintf("; and %d more", len(list)-n)
	}
	return strings.Join(list, "; ")
}

// parseReply reads the model's reply as one JSON object, forgiving a code
// fence or a sentence around it.
func parseReply(text string) (map[string]any, *badReply) {
	s := strings.TrimSpace(text)
	if rest, ok := strings.CutPrefix(s, "```"); ok {
		if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
			rest = rest[nl+1:]
		}
		s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "```"))
	}
	if i, j := strings.IndexByte(s, '{'), strings.LastIndexByte(s, '}'); i >= 0 && j > i && !strings.HasPrefix(s, "[") {
		s = s[i : j+1] // a sentence before or after the object
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(s), &out); err != nil || out == nil {
		excerpt := []rune(strings.TrimSpace(text))
		if len(excerpt) > 120 {
			excerpt = append(excerpt[:120], '…')
		}
		if err == nil {
			err = fmt.Errorf("it is null")
		}
		return nil, &badReply{notJSON: true, details: fmt.Sprintf("not a JSON object (%v); it began: %q", err, string(excerpt))}
	}
	return out, nil
}

// replyProblems says in words what a validation found wrong, a member at
// a time ("missing `emails[0].subject`"), sorted, once each.
func replyProblems(res *jsonschema.EvaluationResult) []string {
	seen := map[string]bool{}
	missing := map[string]bool{}
	var out []string
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	type found struct {
		path string
		err  *jsonschema.EvaluationError
	}
	var all []found
	var walk func(r *jsonschema.EvaluationResult, path string)
	walk = func(r *jsonschema.EvaluationResult, path string) {
		if r == nil || r.Valid {
			return
		}
		here := path + r.InstanceLocation
		for _, e := range r.Errors {
			all = append(all, found{here, e})
			for _, name := range missingOf(e) {
				missing[memberPath(here)+"."+name] = true
			}
		}
		for _, d := range r.Details {
			walk(d, here)
		}
	}
	walk(res, "")
	for _, f := range all {
		at := memberPath(f.path)
		name := "`" + strings.TrimPrefix(at, ".") + "`"
		p := f.err.Params
		switch f.err.Code {
		case "properties_mismatch", "property_mismatch", "item_mismatch", "items_mismatch", "false_schema_mismatch",
			"any_of_item_mismatch", "all_of_item_mismatch":
			// said by the member's own errors
		case "missing_required_property", "missing_required_properties":
			for _, name := range missingOf(f.err) {
				add("missing `" + strings.TrimPrefix(at+"."+name, ".") + "`")
			}
		case "additional_property_mismatch":
			add("`" + strings.TrimPrefix(at+"."+unquote(p["property"]), ".") + "` is not a member of this output")
		case "type_mismatch", "value_not_in_enum":
			if missing[at] {
				continue // said as missing
			}
			if f.err.Code == "value_not_in_enum" {
				add(fmt.Sprintf("%s should be one of: %v", name, p["expected"]))
				continue
			}
			add(fmt.Sprintf("%s should be %s, not %s", name, article(p["expected"]), article(p["received"])))
		case "items_too_short":
			add(fmt.Sprintf("%s has %s; at least %v are needed", name, items(p["count"]), p["min_items"]))
		case "items_too_long":
			add(fmt.Sprintf("%s has %s; at most %v are allowed", name, items(p["count"]), p["max_items"]))
		case "string_too_short":
			if fmt.Sprint(p["min_length"]) == "1" {
				add(name + " is empty")
			} else {
				add(fmt.Sprintf("%s is shorter than %v characters", name, p["min_length"]))
			}
		case "string_too_long":
			add(fmt.Sprintf("%s is longer than %v characters", name, p["max_length"]))
		case "value_below_minimum":
			add(fmt.Sprintf("%s should be at least %v", name, p["minimum"]))
		case "value_above_maximum":
			add(fmt.Sprintf("%s should be at most %v", name, p["maximum"]))
		default:
			if missing[at] {
				continue
			}
			msg := f.err.Error()
			if at == "" {
				add(strings.ToLower(msg[:1]) + msg[1:])
			} else {
				add(name + ": " + strings.ToLower(msg[:1]) + msg[1:])
			}
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		out = []string{"it does not match the output schema"}
	}
	return out
}

// memberPath is a JSON Pointer as a member path: /emails/0/subject is
// .emails[0].subject.
func memberPath(pointer string) string {
	var b strings.Builder
	for _, seg := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		if seg == "" {
			continue
		}
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		if _, err := strconv.Atoi(seg); err == nil {
			b.WriteString("[" + seg + "]")
		} else {
			b.WriteString("." + seg)
		}
	}
	return b.String()
}

// items is a count of items in words: "1 item", "0 items".
func items(n any) string {
	if fmt.Sprint(n) == "1" {
		return "1 item"
	}
	return fmt.Sprintf("%v items", n)
}

func unquote(v any) string { return strings.Trim(fmt.Sprint(v), "'") }

// missingOf is the members a required check found missing: its
// "property", or its "properties" ("'a', 'b'").
func missingOf(e *jsonschema.EvaluationError) []string {
	switch e.Code {
	case "missing_required_property":
		return []string{unquote(e.Params["property"])}
	case "missing_required_properties":
		var out []string
		for _, n := range strings.Split(fmt.Sprint(e.Params["properties"]), ",") {
			out = append(out, unquote(strings.TrimSpace(n)))
		}
		return out
	}
	return nil
}

// article is a JSON type with its article: "a string", "an array".
func article(v any) string {
	t := fmt.Sprint(v)
	switch t {
	case "null":
		return "null"
	case "array", "integer", "object":
		return "an " + t
	}
	return "a " + t
}
