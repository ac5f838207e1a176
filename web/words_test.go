package web

import (
	"testing"
)

func TestNamesBreakOnlyAfterUnderscores(t *testing.T) {
	for in, want := range map[string]string{
		"key_points":           "key_<wbr>points",
		"interaction_language": "interaction_<wbr>language",
		"tone":                 "tone",
		"a<b>_c":               "a&lt;b&gt;_<wbr>c",
	} {
		if got := string(nameBreaks(in)); got != want {
			t.Errorf("nameBreaks(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestInputsReadAsWordsNotGoValues(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{true, "Yes"}, {false, "No"}, {"text", "text"}, {float64(12), "12"}, {float64(2.5), "2.5"},
		{[]any{"a", "b", true}, "a, b, Yes"}, {nil, "—"}, {map[string]any{"k": "v"}, `{"k":"v"}`},
	} {
		if got := inputText(tc.in); got != tc.want {
			t.Errorf("inputText(%#v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A key made words keeps its acronyms whole: "CTA goal", not "Cta goal".
func TestKeysReadAsWordsWithTheirAcronyms(t *testing.T) {
	for in, want := range map[string]string{
		"cta_goal":    "CTA goal",
		"seo_title":   "SEO title",
		"faq":         "FAQ",
		"landing_url": "Landing URL",
		"subject":     "Subject",
		"actual_ctas": "Actual ctas",
		"":            "",
	} {
		if got := words(in); got != want {
			t.Errorf("words(%q) = %q, want %q", in, got, want)
		}
	}
}
