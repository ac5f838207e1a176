package web

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// The WHATWG URL cases a browser resolves to another host, which land on
// the dashboard instead, and the same-origin paths that must be kept.
func TestSafeNextKeepsRedirectsOnThisOrigin(t *testing.T) {
	t.Parallel()
	refused := []string{
		"", "https://evil.com", "//evil.com", "///evil.com", "/\\evil.com", "\\\\evil.com", "/\t/evil.com",
		"/\t\\evil.com", "/\n/evil.com", "/\r/evil.com", "\t//evil.com", " //evil.com", "/ /evil.com",
		"\x00//evil.com", "/\x7f/evil.com", "javascript:alert(1)", "evil.com", "http:/evil.com",
		"https:evil.com", "/\\/evil.com", "%2F%2Fevil.com", "/%2F/evil.com", "\u3000//evil.com",
	}
	for _, next := range refused {
		if got := safeNext(next); got != "/" {
			t.Errorf("safeNext(%q) = %q, want / (the dashboard)", next, got)
		}
	}
	kept := []string{"/runs", "/apps/cold-email-writer", "/runs/run_abc?tab=output", "/a//b", "/settings/keys#new"}
	for _, next := range kept {
		if got := safeNext(next); got != next {
			t.Errorf("safeNext(%q) = %q, want it kept", next, got)
		}
	}
}

// A page asked for without a session sends to sign-in with its path and
// query as next, and the Location header echoes what the request sent: a
// long query (the finding: 64 KB became an 87 KB header) returns to the
// path alone, a long path to no next at all; what is echoed is always
// what safeNext keeps.
func TestSignInNeverEchoesALongReturn(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 64<<10)
	for _, tc := range []struct{ target, want string }{
		{"/runs?status=failed&cursor=abc", "/signin?next=%2Fruns%3Fstatus%3Dfailed%26cursor%3Dabc"},
		{"/runs?q=" + long, "/signin?next=%2Fruns"},
		{"/runs?q=" + strings.Repeat("/", 700), "/signin?next=%2Fruns"}, // 700 bytes, 2,100 escaped
		{"/runs/" + long + "?tab=output", "/signin"},
	} {
		got := signInFor(httptest.NewRequest("GET", tc.target, nil))
		if got != tc.want {
			t.Errorf("%.40s…: %.80s, want %s", tc.target, got, tc.want)
		}
		if len(got) > len("/signin?next=")+maxNext {
			t.Errorf("%.40s…: a %d-byte Location", tc.target, len(got))
		}
		if next, err := url.ParseQuery(strings.TrimPrefix(got, "/signin?")); err == nil && next.Get("next") != "" && safeNext(next.Get("next")) != next.Get("next") {
			t.Errorf("%.40s…: next %q is not kept after sign-in", tc.target, next.Get("next"))
		}
	}
}
