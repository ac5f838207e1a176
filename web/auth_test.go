package web

import "testing"

// The WHATWG URL cases a browser resolves to another host, and the
// same-origin paths that must be kept.
func TestSafeNextKeepsRedirectsOnThisOrigin(t *testing.T) {
	t.Parallel()
	refused := []string{
		"", "https://evil.com", "//evil.com", "///evil.com", "/\\evil.com", "\\\\evil.com", "/\t/evil.com",
		"/\t\\evil.com", "/\n/evil.com", "/\r/evil.com", "\t//evil.com", " //evil.com", "/ /evil.com",
		"\x00//evil.com", "/\x7f/evil.com", "javascript:alert(1)", "evil.com", "http:/evil.com",
		"https:evil.com", "/\\/evil.com", "%2F%2Fevil.com", "/%2F/evil.com", "\u3000//evil.com",
	}
	for _, next := range refused {
		if got := safeNext(next); got != "/runs" {
			t.Errorf("safeNext(%q) = %q, want /runs", next, got)
		}
	}
	kept := []string{"/runs", "/apps/cold-email-writer", "/runs/run_abc?tab=output", "/a//b", "/settings/keys#new"}
	for _, next := range kept {
		if got := safeNext(next); got != next {
			t.Errorf("safeNext(%q) = %q, want it kept", next, got)
		}
	}
}
