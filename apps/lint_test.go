package apps

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// instructionBudget is the most characters a model step's instructions
// may have (a budget: the system message is paid for on every run).
const instructionBudget = 4000

// The catalog lint: no two Apps share near-identical instructions (an App
// is not another's prompt under a new name), and each prompt keeps its
// budget. Titles, descriptions and examples: TestEveryInputHasATitle….
func TestCatalogLint(t *testing.T) {
	defs := shippedDefinitions(t)
	words := map[string]map[string]bool{}
	for slug, d := range defs {
		var text strings.Builder
		for _, s := range d.Steps {
			if s.Model != nil {
				if n := len(s.Model.Instructions); n > instructionBudget {
					t.Errorf("%s: instructions of %d characters, over the budget of %d", slug, n, instructionBudget)
				}
				text.WriteString(s.Model.Instructions)
			}
		}
		set := map[string]bool{}
		for _, w := range strings.Fields(strings.ToLower(text.String())) {
			set[strings.Trim(w, `.,:;"'()-*{}`)] = true
		}
		words[slug] = set
	}
	for a, wa := range words {
		for b, wb := range words {
			if a >= b || len(wa) == 0 || len(wb) == 0 {
				continue
			}
			same := 0
			for w := range wa {
				if wb[w] {
					same++
				}
			}
			if j := float64(same) / float64(len(wa)+len(wb)-same); j > 0.6 {
				t.Errorf("%s and %s have near-identical instructions (%.0f%% of their words shared)", a, b, 100*j)
			}
		}
	}
}

// Prices follow the one rule in price.go, from the steps and tools.
func TestShippedPricesFollowTheRule(t *testing.T) {
	for slug, d := range shippedDefinitions(t) {
		if want := PriceByRule(d); d.Price != want {
			t.Errorf("%s: price %d, but its steps make %d by the rule", slug, d.Price, want)
		}
	}
}

// Every App writes Chinese as well as English: the language is a choice
// its instructions pass on to the model.
func TestEveryAppOffersChinese(t *testing.T) {
	for slug, d := range shippedDefinitions(t) {
		var s struct {
			Properties map[string]struct {
				Enum []string `json:"enum"`
			} `json:"properties"`
		}
		_ = json.Unmarshal(d.InputSchema, &s)
		if !slices.Equal(s.Properties["interaction_language"].Enum, []string{"English", "Chinese"}) {
			t.Errorf("%s: interaction_language offers %v, want English and Chinese", slug, s.Properties["interaction_language"].Enum)
		}
		for _, st := range d.Steps {
			if st.Model != nil && !strings.Contains(st.Model.Instructions, "{{.Input.interaction_language}}") {
				t.Errorf("%s: step %s does not tell the model the language", slug, st.Name)
			}
		}
	}
}

// No example holds a null: in YAML's flow style an unquoted comma splits
// a value into a second key with no value ({body: a, b.} is body "a" and
// a key "b." that is null), which the output schema may let through.
func TestExamplesHoldNoNulls(t *testing.T) {
	t.Parallel()
	var nulls func(v any, at string) []string
	nulls = func(v any, at string) []string {
		var out []string
		switch x := v.(type) {
		case nil:
			return []string{at}
		case map[string]any:
			for k, e := range x {
				out = append(out, nulls(e, at+"."+k)...)
			}
		case []any:
			for i, e := range x {
				out = append(out, nulls(e, at+"["+strconv.Itoa(i)+"]")...)
			}
		}
		return out
	}
	for slug, d := range shippedDefinitions(t) {
		for i, ex := range d.Examples {
			var out any
			_ = json.Unmarshal(ex.Output, &out)
			found := append(nulls(map[string]any(ex.Input), "input"), nulls(out, "output")...)
			if len(found) > 0 {
				t.Errorf("%s: example %d has nulls at %v: quote a value with a comma in it", slug, i, found)
			}
		}
	}
}
