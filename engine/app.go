package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// App is one runnable (or listed but not yet runnable) App of the catalog.
type App struct {
	Slug        string
	Name        string
	Description string
	// Category groups the App in lists (the catalog's categories).
	Category string
	// Price is the App's initial price in Credits, written to the log as the
	// first price event; 0 means the App has no price until an admin sets one.
	Price               int64
	Timeout             time.Duration
	Retention           time.Duration
	AcceptsBrandContext bool
	// Runnable Apps are in the capability list and can be run; others answer
	// app_not_found.
	Runnable    bool
	InputSchema json.RawMessage
	// OutputSchema, when set, is the JSON Schema of a completed run's
	// output (MCP declares it on the App's tool).
	OutputSchema json.RawMessage
	// Executor does the work of a run. Required when Runnable.
	Executor Executor
	// Version is the App definition's content hash ("sha256:…"): a
	// run's created event keeps it, so a record says what ran.
	Version string

	schema InputSchema
}

// InputSchema checks one App's input. Check returns the input with the
// schema's defaults filled in, or a description naming each failing field.
type InputSchema interface {
	// Check returns input with the schema's defaults filled in, or what
	// is wrong with it, each failing field apart.
	Check(input map[string]any) (map[string]any, []FieldError)
}

// Executor does the work of one run, reporting each step through progress.
// An *Error or *RunError returned carries the failure code shown to the client (its
// Message too); any other error fails the run with execution_failed.
type Executor func(ctx context.Context, job Job, progress func(Step)) (Result, error)

// Job is what an Executor gets: the validated input with defaults applied,
// and the brand context when the run names one.
type Job struct {
	RunNo        string
	AppSlug      string
	Input        map[string]any
	BrandContext *BrandContext
	// Model is the model the run asked for instead of the node's ("":
	// the node's).
	Model string
	// Record, when set, takes each entry of the run's record as its step
	// ends (record.go); nil records nothing.
	Record func(RecordEntry)
	// Replay, when set, is a recorded run to replay: the executor serves
	// every model call and source read from it, in order, and calls no
	// model and no network. A call the record does not hold fails with
	// ErrNotRecorded. Its start entry says which steps to take and the
	// brand context used.
	Replay []RecordEntry
}

// Result is a finished run's report.
type Result struct {
	Summary string
	Output  any
}

// Catalog holds the Apps by slug.
type Catalog struct {
	apps map[string]*App
}

// NewCatalog compiles each App's input schema with compile and checks the
// definitions. The JSON Schema library sits behind compile (package
// inputschema's Compile), outside the domain.
func NewCatalog(compile func(schema json.RawMessage) (InputSchema, error), apps ...App) (*Catalog, error) {
	c := &Catalog{apps: map[string]*App{}}
	for i := range apps {
		a := apps[i]
		if a.Slug == "" || strings.ContainsAny(a.Slug, " .*>") {
			return nil, fmt.Errorf("app %q: slug must be non-empty and a single subject token", a.Slug)
		}
		if _, dup := c.apps[a.Slug]; dup {
			return nil, fmt.Errorf("app %q: defined twice", a.Slug)
		}
		if a.Runnable && a.Executor == nil {
			return nil, fmt.Errorf("app %q: runnable but has no executor", a.Slug)
		}
		if a.Timeout <= 0 {
			a.Timeout = 15 * time.Minute
		}
		if a.Retention <= 0 {
			a.Retention = 30 * 24 * time.Hour
		}
		s, err := compile(a.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("app %q: input schema: %w", a.Slug, err)
		}
		a.schema = s
		c.apps[a.Slug] = &a
	}
	return c, nil
}

// Lookup returns a runnable App, or app_not_found.
func (c *Catalog) Lookup(slug string) (*App, error) {
	a, ok := c.apps[slug]
	if !ok || !a.Runnable {
		return nil, Errorf(CodeAppNotFound, "no runnable App with slug %q", slug)
	}
	return a, nil
}

// Runnable lists the runnable Apps sorted by slug.
func (c *Catalog) Runnable() []*App {
	var out []*App
	for _, a := range c.apps {
		if a.Runnable {
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	return out
}

// Get returns the App with slug, runnable or not.
func (c *Catalog) Get(slug string) (*App, bool) {
	a, ok := c.apps[slug]
	return a, ok
}

// All lists every App, runnable or not, sorted by slug (what is made
// from the list, the OpenAPI document first, is then the same each time).
func (c *Catalog) All() []*App {
	out := make([]*App, 0, len(c.apps))
	for _, a := range c.apps {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	return out
}

// ValidateInput checks input against the App's schema and returns it with
// schema defaults filled in, or invalid_input naming each failing field.
func (a *App) ValidateInput(input map[string]any) (map[string]any, error) {
	out, problems := a.schema.Check(input)
	if len(problems) > 0 {
		return nil, &Error{Code: CodeInvalidInput, Message: fieldMessage(problems), Fields: problems}
	}
	return out, nil
}
