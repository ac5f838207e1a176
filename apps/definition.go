package apps

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/apprun/apprun/llm"
	"github.com/goccy/go-yaml"
	"github.com/kaptinlin/jsonschema"
)

// Definition is one App as its definition file states it (YAML or JSON).
type Definition struct {
	Slug        string `json:"slug"`
	Name        string `json:"name"`
	Description string `json:"description"`
	// Category groups the App in the capability list, the website and MCP
	// (one of Categories).
	Category string `json:"category"`
	// Price is the App's first price in Credits (an admin may change it).
	Price               int64    `json:"price"`
	Timeout             Duration `json:"timeout"`
	Retention           Duration `json:"retention"`
	AcceptsBrandContext bool     `json:"accepts_brand_context"`
	// NeedsModel Apps are runnable only with a model provider configured.
	NeedsModel   bool            `json:"needs_model"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema"`
	// Steps run in order: tool steps, then one model step that writes the
	// output. WithoutModel are the steps used when no model is configured
	// (only for Apps that do not need one).
	Steps        []StepDef `json:"steps"`
	WithoutModel []StepDef `json:"without_model,omitempty"`
	// Summary is a text/template over .Input and .Output: the run's summary.
	Summary string `json:"summary"`
	// Summaries are the summary in other languages, by the value of the
	// input's interaction_language (e.g. Chinese): a run in that language
	// gets its summary from it.
	Summaries map[string]string `json:"summaries,omitempty"`
	Examples  []Example         `json:"examples"`
}

// StepDef is one step: a tool (by name) or a model call.
type StepDef struct {
	Name string `json:"name"`
	// Message is shown on the run's stream when the step starts.
	Message string `json:"message"`
	Tool    string `json:"tool,omitempty"`
	// Input names the run input field a tool reads.
	Input string     `json:"input,omitempty"`
	Model *ModelStep `json:"model,omitempty"`
}

// ModelStep is a call to the model.
type ModelStep struct {
	// Instructions is a text/template for the system message. It sees
	// .Input with only the input fields a user cannot write freely (an
	// enum, a number, a boolean) and .HasBrand. Free text reaches the model
	// only as delimited data in the user message.
	Instructions string   `json:"instructions"`
	Temperature  *float64 `json:"temperature,omitempty"`
	// Size is how much the step writes (short, standard, long, extended;
	// standard when absent): what the price rule charges for it.
	Size string `json:"size,omitempty"`
	// Set adds fields to the reply before it is checked, each a template
	// like the instructions (e.g. the language the input chose).
	Set map[string]string `json:"set,omitempty"`
	// Repairs is how many times a reply that does not fit the output
	// schema is sent back to the model, with what is wrong with it, for a
	// corrected one (1 when absent; 0: none).
	Repairs *int `json:"repairs,omitempty"`
}

// maxRepairs bounds a step's repairs: each is a paid model call.
const maxRepairs = 3

// repairs is the step's number of repair calls.
func (m *ModelStep) repairs() int {
	if m == nil || m.Repairs == nil {
		return 1
	}
	return *m.Repairs
}

// Example is an input the App must accept, and an output it could give.
type Example struct {
	Input  map[string]any  `json:"input"`
	Output json.RawMessage `json:"output"`
}

// Duration is a time.Duration written as "15m", "2h" or "30d".
type Duration time.Duration

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string like \"15m\" or \"30d\": %w", err)
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 {
			return fmt.Errorf("duration %q: want a whole number of days", s)
		}
		*d = Duration(time.Duration(n) * 24 * time.Hour)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		return fmt.Errorf("duration %q: want a positive duration like \"15m\" or \"30d\"", s)
	}
	*d = Duration(v)
	return nil
}

// parseDefinition reads one definition file: YAML (a superset of JSON),
// strictly: an unknown field is an error, so a misspelt one is not lost.
func parseDefinition(data []byte) (Definition, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return Definition{}, fmt.Errorf("not YAML or JSON: %w", err)
	}
	return decodeDefinition(js)
}

// decodeDefinition reads a definition from its JSON form.
func decodeDefinition(js []byte) (Definition, error) {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	var d Definition
	if err := dec.Decode(&d); err != nil {
		return Definition{}, err
	}
	return d, nil
}

// summaryFuncs are the functions a summary template may call beyond the
// built-in ones.
var summaryFuncs = template.FuncMap{
	"last": func(list []any) any {
		if len(list) == 0 {
			return nil
		}
		return list[len(list)-1]
	},
}

// Categories are the catalog's groups, in the order lists show them.
var Categories = []string{
	"Outbound email", "Replies and objections", "Social posts", "Ads", "SEO", "Landing pages",
	"Launches and releases", "Newsletters", "Case studies and testimonials", "Positioning and messaging",
	"Personas and ICP", "Competitor comparison", "Pricing", "Webinars and events", "Community and open source",
	"Video scripts", "PR", "Localisation",
}

var slugPattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
var namePattern = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// compiled is a checked definition, ready to run.
type compiled struct {
	def Definition
	// version is the definition file's SHA-256 (engine.App.Version).
	version string
	output  *jsonschema.Schema
	input   *jsonschema.Schema
	// choices are the input fields instructions may see.
	choices      map[string]bool
	summary      *template.Template
	summaries    map[string]*template.Template // by interaction_language
	instructions map[string]*template.Template // by step name
	set          map[string]map[string]*template.Template
	// strict is the output schema converted for strict structured
	// outputs (llm.StrictSchema); empty when it cannot be.
	strict json.RawMessage
	// shape orders the output's members and reads a strict reply's nulls.
	shape *outputShape
}

// check validates a definition and compiles its schemas and templates.
func check(d Definition) (*compiled, error) {
	switch {
	case !slugPattern.MatchString(d.Slug):
		return nil, fmt.Errorf("slug %q: want lowercase words joined by hyphens", d.Slug)
	case d.Name == "" || d.Description == "":
		return nil, errors.New("name and description are required")
	case !slices.Contains(Categories, d.Category):
		return nil, fmt.Errorf("category %q: want one of %s", d.Category, strings.Join(Categories, ", "))
	case d.Price < 0:
		return nil, errors.New("price must not be negative")
	case len(d.Steps) == 0:
		return nil, errors.New("steps: at least one is required")
	case len(d.Examples) == 0:
		return nil, errors.New("examples: at least one is required (each input is validated at start)")
	}
	c := &compiled{def: d, instructions: map[string]*template.Template{}, set: map[string]map[string]*template.Template{}}
	var err error
	if c.input, err = jsonschema.NewCompiler().Compile(d.InputSchema); err != nil || len(d.InputSchema) == 0 {
		return nil, fmt.Errorf("input_schema: %v", orMissing(err))
	}
	if c.output, err = jsonschema.NewCompiler().Compile(d.OutputSchema); err != nil || len(d.OutputSchema) == 0 {
		return nil, fmt.Errorf("output_schema: %v", orMissing(err))
	}
	c.strict, _ = llm.StrictSchema(d.OutputSchema) // a root other than an object: the prompt alone asks
	c.shape = shapeOf(d.OutputSchema)
	if err := checkKeywords(d.InputSchema, "input_schema"); err != nil {
		return nil, err
	}
	if err := checkKeywords(d.OutputSchema, "output_schema"); err != nil {
		return nil, err
	}
	if c.choices, err = choiceFields(d.InputSchema); err != nil {
		return nil, fmt.Errorf("input_schema: %w", err)
	}
	hasModel, err := c.checkSteps("steps", d.Steps)
	if err != nil {
		return nil, err
	}
	switch {
	case d.NeedsModel && !hasModel:
		return nil, errors.New("needs_model is true but no step calls the model")
	case d.NeedsModel && len(d.WithoutModel) > 0:
		return nil, errors.New("without_model: an App that needs a model has no steps without one")
	case !d.NeedsModel && hasModel && len(d.WithoutModel) == 0:
		return nil, errors.New("needs_model is false, so without_model must say what runs when no model is configured")
	case !hasModel && len(d.WithoutModel) > 0:
		return nil, errors.New("without_model: the steps call no model, so they always run")
	}
	if len(d.WithoutModel) > 0 {
		if usesModel, err := c.checkSteps("without_model", d.WithoutModel); err != nil {
			return nil, err
		} else if usesModel {
			return nil, errors.New("without_model: a step calls the model")
		}
	}
	if c.summary, err = template.New("summary").Funcs(summaryFuncs).Option("missingkey=zero").Parse(d.Summary); err != nil || d.Summary == "" {
		return nil, fmt.Errorf("summary: %v", orMissing(err))
	}
	c.summaries = map[string]*template.Template{}
	for lang, text := range d.Summaries {
		if c.summaries[lang], err = template.New("summary").Funcs(summaryFuncs).Option("missingkey=zero").Parse(text); err != nil || text == "" {
			return nil, fmt.Errorf("summaries.%s: %v", lang, orMissing(err))
		}
	}
	for i, ex := range d.Examples {
		if err := c.checkExample(ex); err != nil {
			return nil, fmt.Errorf("examples[%d]: %w", i, err)
		}
	}
	return c, nil
}

// checkSteps checks a step list: unique names, tools that exist, and at
// most one model step, last. It reports whether a step calls the model.
func (c *compiled) checkSteps(field string, steps []StepDef) (bool, error) {
	seen := map[string]bool{}
	model := false
	for i, s := range steps {
		at := fmt.Sprintf("%s[%d]", field, i)
		switch {
		case !namePattern.MatchString(s.Name):
			return false, fmt.Errorf("%s: name %q: want a lowercase identifier", at, s.Name)
		case seen[s.Name]:
			return false, fmt.Errorf("%s: name %q is used twice", at, s.Name)
		case (s.Tool == "") == (s.Model == nil):
			return false, fmt.Errorf("%s: a step is either a tool or a model call", at)
		case s.Message == "":
			return false, fmt.Errorf("%s: message is required (it is shown while the step runs)", at)
		}
		seen[s.Name] = true
		if s.Tool != "" {
			t, ok := tools[s.Tool]
			if !ok {
				return false, fmt.Errorf("%s: no tool %q (have %s)", at, s.Tool, toolNames())
			}
			if t.needsInput && s.Input == "" {
				return false, fmt.Errorf("%s: tool %s needs input: the input field it reads", at, s.Tool)
			}
			continue
		}
		if i != len(steps)-1 {
			return false, fmt.Errorf("%s: the model step must be the last: it writes the output", at)
		}
		model = true
		tm, err := template.New(s.Name).Option("missingkey=error").Parse(s.Model.Instructions)
		if err != nil || strings.TrimSpace(s.Model.Instructions) == "" {
			return false, fmt.Errorf("%s: instructions: %v", at, orMissing(err))
		}
		if err := checkSize(s.Model); err != nil {
			return false, fmt.Errorf("%s: %w", at, err)
		}
		if r := s.Model.repairs(); r < 0 || r > maxRepairs {
			return false, fmt.Errorf("%s: repairs %d: want 0 to %d", at, r, maxRepairs)
		}
		c.instructions[s.Name] = tm
		c.set[s.Name] = map[string]*template.Template{}
		for k, v := range s.Model.Set {
			st, err := template.New(k).Option("missingkey=error").Parse(v)
			if err != nil {
				return false, fmt.Errorf("%s: set.%s: %w", at, k, err)
			}
			c.set[s.Name][k] = st
		}
	}
	return model, nil
}

// checkExample validates an example's input and output, and renders the
// instructions with it (a template naming a free-text field fails here).
func (c *compiled) checkExample(ex Example) error {
	if res := c.input.Validate(ex.Input); !res.IsValid() {
		return fmt.Errorf("input does not match input_schema: %s", errorList(res))
	}
	var out any
	if err := json.Unmarshal(ex.Output, &out); err != nil || len(ex.Output) == 0 {
		return fmt.Errorf("output: %v", orMissing(err))
	}
	if res := c.output.Validate(out); !res.IsValid() {
		return fmt.Errorf("output does not match output_schema: %s", errorList(res))
	}
	// Rendered as a run would be: with the schema's defaults filled in.
	in := map[string]any{}
	for k, v := range ex.Input {
		in[k] = v
	}
	if c.input.Properties != nil {
		for name, p := range *c.input.Properties {
			if _, set := in[name]; !set && p != nil && p.Default != nil {
				in[name] = p.Default
			}
		}
	}
	data := c.promptData(in, true)
	for name, tm := range c.instructions {
		if err := tm.Execute(&strings.Builder{}, data); err != nil {
			return fmt.Errorf("step %s: instructions: %w (they may use only fields with an enum, numbers and booleans: free text reaches the model as data)", name, err)
		}
		for k, st := range c.set[name] {
			if err := st.Execute(&strings.Builder{}, data); err != nil {
				return fmt.Errorf("step %s: set.%s: %w", name, k, err)
			}
		}
	}
	if err := c.summary.Execute(&strings.Builder{}, summaryData{Input: in, Output: out}); err != nil {
		return fmt.Errorf("summary: %w", err)
	}
	for lang, tm := range c.summaries {
		if err := tm.Execute(&strings.Builder{}, summaryData{Input: in, Output: out}); err != nil {
			return fmt.Errorf("summaries.%s: %w", lang, err)
		}
	}
	return nil
}

// summaryFor is the summary template for a run's input: the one in its
// interaction_language when the definition has it.
func (c *compiled) summaryFor(input map[string]any) *template.Template {
	if lang, _ := input["interaction_language"].(string); c.summaries[lang] != nil {
		return c.summaries[lang]
	}
	return c.summary
}

// choiceFields lists the top-level input properties that a user cannot
// fill with free text: an enum, or a number, integer or boolean type.
func choiceFields(schema json.RawMessage) (map[string]bool, error) {
	var s struct {
		Properties map[string]struct {
			Type any   `json:"type"`
			Enum []any `json:"enum"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for name, p := range s.Properties {
		t, _ := p.Type.(string)
		if len(p.Enum) > 0 || t == "number" || t == "integer" || t == "boolean" {
			out[name] = true
		}
	}
	return out, nil
}

func orMissing(err error) error {
	if err == nil {
		return errors.New("missing")
	}
	return err
}

// errorList is a validation result as "path: message; ...".
func errorList(res *jsonschema.EvaluationResult) string {
	var parts []string
	for path, msg := range res.DetailedErrors() {
		parts = append(parts, strings.TrimPrefix(path, "/")+": "+msg)
	}
	if len(parts) == 0 {
		return "does not match the schema"
	}
	sortStrings(parts)
	if len(parts) > 5 {
		parts = append(parts[:5], fmt.Sprintf("and %d more", len(parts)-5))
	}
	return strings.Join(parts, "; ")
}
