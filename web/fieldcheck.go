package web

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// checkField says in plain words what is wrong with one submitted field,
// or "" when the form's own rules (the App's schema: required, lengths,
// ranges, choices, URLs) hold. The App's validation stays the authority;
// this puts each answer beside its field.
func checkField(p param, raw string) string {
	if !utf8.ValidString(raw) {
		// A browser sends the page's UTF-8; decoded leniently, these
		// bytes would run (and be paid for) as U+FFFD.
		return "Use text in UTF-8: this has a byte that is not."
	}
	v := strings.TrimSpace(raw)
	if p.Field() == "checkbox" {
		return ""
	}
	if v == "" {
		if p.Required {
			return fmt.Sprintf("Enter %s: it is required.", strings.ToLower(p.Label()))
		}
		return ""
	}
	switch p.Type {
	case "integer", "number":
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || (p.Type == "integer" && n != float64(int64(n))) {
			if p.Type == "integer" {
				return "Enter a whole number, such as 12."
			}
			return "Enter a number, such as 12.5."
		}
		switch {
		case p.Minimum != nil && p.Maximum != nil && (n < *p.Minimum || n > *p.Maximum):
			return fmt.Sprintf("Enter a number from %g to %g.", *p.Minimum, *p.Maximum)
		case p.Minimum != nil && n < *p.Minimum:
			return fmt.Sprintf("Enter %g or more.", *p.Minimum)
		case p.Maximum != nil && n > *p.Maximum:
			return fmt.Sprintf("Enter %g or less.", *p.Maximum)
		}
		return ""
	}
	if len(p.Enum) > 0 && !slices.Contains(p.Enum, v) {
		return "Choose one of the options."
	}
	n := utf8.RuneCountInString(strings.ReplaceAll(v, "\r\n", "\n"))
	if p.MaxLength > 0 && n > p.MaxLength {
		return fmt.Sprintf("Use at most %d characters; this has %d.", p.MaxLength, n)
	}
	if p.MinLength > 0 && n < p.MinLength {
		return fmt.Sprintf("Use at least %d characters; this has %d.", p.MinLength, n)
	}
	if p.Format == "uri" {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "Enter a full web address, starting with https://."
		}
	}
	if p.Pattern != "" {
		if re, err := regexp.Compile(p.Pattern); err == nil && !re.MatchString(v) {
			if a := p.Allowed(); a != "" {
				return "Enter " + a + "."
			}
			return "This is not in the expected form."
		}
	}
	return ""
}

// hasParam says whether the form has a field named name.
func hasParam(ps []param, name string) bool {
	for _, p := range ps {
		if p.Name == name {
			return true
		}
	}
	return false
}
