package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/apprun/apprun/apps"
	"github.com/apprun/apprun/engine"
)

// appsCmd is `apprun apps [<slug>]`: the catalog this binary serves, read
// offline from the definitions compiled into it and those in
// APPRUN_APPS_DIR, exactly as `apprun serve` loads them. It needs no
// server and no key, lists the Apps that need a model too (a server's
// GET /api/v1/capabilities lists only what it can run), and checks an
// App author's definitions without starting a server.
func (x *cli) appsCmd() *command {
	c := newCommand("apps", "[<slug>]", "list the Apps, or show one App's inputs and output")
	c.about = `Apps lists the Apps this binary serves: slug, name, price in Credits and
whether it needs a model. With a slug it shows the App: its input fields
(the JSON object 'apprun run <slug> --input' takes) and its output's shape.

The catalog is read here, not from a server: the definitions compiled into
apprun, and those in --apps-dir, checked as 'apprun serve' checks them (a bad
one exits 1, naming its file). Prices are the definitions'; an admin may
have set another on a server (its GET /api/v1/capabilities says). An App
that needs a model runs only on a server with one (OPENAI_BASE_URL). An
unknown slug exits 1.`
	c.maxArgs = 1
	dir := c.flags.String("apps-dir", "", "directory of App definitions that add to or replace the shipped ones (APPRUN_APPS_DIR)")
	c.env.bind("apps-dir", "APPRUN_APPS_DIR")
	c.exec = func(args []string) error {
		// No model: an App is then runnable exactly when it needs none.
		list, err := apps.Load(*dir, &apps.Env{})
		if err != nil {
			return err
		}
		if len(args) == 0 {
			return listApps(x.stdout, list)
		}
		for _, a := range list {
			if a.Slug == args[0] {
				return showApp(x.stdout, a)
			}
		}
		return fmt.Errorf("no App %q: apprun apps lists them", args[0])
	}
	return c
}

func listApps(w io.Writer, list []engine.App) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SLUG\tNAME\tCREDITS\tNEEDS MODEL")
	for _, a := range list {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", a.Slug, a.Name, a.Price, yesNo(!a.Runnable))
	}
	return tw.Flush()
}

func showApp(w io.Writer, a engine.App) error {
	fmt.Fprintf(w, "%s: %s\n%s\n\n", a.Slug, a.Name, a.Description)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Category:\t%s\n", a.Category)
	fmt.Fprintf(tw, "Price:\t%d Credits\n", a.Price)
	fmt.Fprintf(tw, "Needs a model:\t%s\n", yesNo(!a.Runnable))
	fmt.Fprintf(tw, "Brand context:\t%s\n", map[bool]string{true: "accepted", false: "not accepted"}[a.AcceptsBrandContext])
	fmt.Fprintf(tw, "Timeout:\t%s\n", days(a.Timeout))
	fmt.Fprintf(tw, "Runs kept for:\t%s\n", days(a.Retention))
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintf(w, "\nInput: a JSON object (apprun run %s --input file.json)\n", a.Slug)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FIELD\tTYPE\tREQUIRED\tDEFAULT\tDESCRIPTION")
	in := readSchema(a.InputSchema)
	for _, m := range members(a.InputSchema) {
		f := readSchema(m.schema)
		def := ""
		if f.Default != nil {
			def = fmt.Sprint(f.Default)
		}
		about := f.Description
		if about == "" {
			about = f.Title
		}
		if allowed := f.allowed(); allowed != "" {
			about = strings.TrimSuffix(about, ".") + ". " + allowed
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.name, f.typeName(), yesNo(in.requires(m.name)), def, about)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w, "\nOutput: a JSON object")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	writeShape(tw, a.OutputSchema, "  ")
	return tw.Flush()
}

// writeShape writes an object schema's members, one a line with its type,
// and the members of the objects inside it, indented.
func writeShape(w io.Writer, schema json.RawMessage, indent string) {
	parent := readSchema(schema)
	for _, m := range members(schema) {
		f := readSchema(m.schema)
		t := f.typeName()
		if !parent.requires(m.name) {
			t += ", optional"
		}
		if allowed := f.allowed(); allowed != "" {
			t += "; " + strings.TrimSuffix(strings.ToLower(allowed[:1])+allowed[1:], ".")
		}
		fmt.Fprintf(w, "%s%s\t%s\n", indent, m.name, t)
		inner := m.schema
		if len(f.Items) > 0 {
			inner = f.Items
		}
		writeShape(w, inner, indent+"  ")
	}
}

// schema is what apprun apps shows of a JSON schema.
type schema struct {
	Type                 any             `json:"type"`
	Title                string          `json:"title"`
	Description          string          `json:"description"`
	Format               string          `json:"format"`
	Enum                 []any           `json:"enum"`
	Default              any             `json:"default"`
	Minimum              *float64        `json:"minimum"`
	Maximum              *float64        `json:"maximum"`
	MinItems             *int            `json:"minItems"`
	MaxItems             *int            `json:"maxItems"`
	Items                json.RawMessage `json:"items"`
	Required             []string        `json:"required"`
	AdditionalProperties json.RawMessage `json:"additionalProperties"`
}

func readSchema(raw json.RawMessage) schema {
	var s schema
	_ = json.Unmarshal(raw, &s) // the definitions were checked when loaded
	return s
}

func (s schema) requires(name string) bool {
	for _, r := range s.Required {
		if r == name {
			return true
		}
	}
	return false
}

// typeName is "string", "integer", "array of object, 3 to 5 items".
func (s schema) typeName() string {
	var t string
	switch v := s.Type.(type) {
	case string:
		t = v
	case []any:
		var names []string
		for _, n := range v {
			names = append(names, fmt.Sprint(n))
		}
		t = strings.Join(names, " or ")
	default:
		if len(s.Enum) > 0 {
			t = "string"
		}
	}
	if t != "array" {
		return t
	}
	if item := readSchema(s.Items).typeName(); item != "" {
		t += " of " + item
	}
	switch {
	case s.MinItems != nil && s.MaxItems != nil:
		t += fmt.Sprintf(", %d to %d items", *s.MinItems, *s.MaxItems)
	case s.MinItems != nil && *s.MinItems > 0:
		t += fmt.Sprintf(", at least %d %s", *s.MinItems, items(*s.MinItems))
	case s.MaxItems != nil:
		t += fmt.Sprintf(", at most %d %s", *s.MaxItems, items(*s.MaxItems))
	}
	return t
}

func items(n int) string {
	if n == 1 {
		return "item"
	}
	return "items"
}

// allowed says which values a field takes, when its type does not.
func (s schema) allowed() string {
	switch {
	case len(s.Enum) > 0:
		var vs []string
		for _, v := range s.Enum {
			vs = append(vs, fmt.Sprint(v))
		}
		return "One of: " + strings.Join(vs, ", ") + "."
	case s.Minimum != nil && s.Maximum != nil:
		return fmt.Sprintf("From %g to %g.", *s.Minimum, *s.Maximum)
	case s.Format == "uri":
		return "A URL."
	}
	return ""
}

type member struct {
	name   string
	schema json.RawMessage
}

// members are an object schema's properties in the order the definition
// lists them (a Go map would lose it).
func members(raw json.RawMessage) []member {
	var s struct {
		Properties json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(raw, &s) != nil || len(s.Properties) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(s.Properties))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var out []member
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return out
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return out
		}
		out = append(out, member{fmt.Sprint(k), v})
	}
	return out
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// days is a duration as a definition writes it: "15m", "2h", "30d".
func days(d time.Duration) string {
	switch {
	case d <= 0:
		return d.String()
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}
