package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

var devMailLink = regexp.MustCompile(`href="(http://[^"]+/password/reset\?token=[A-Za-z0-9_-]+)"`)

// resetThroughTheSite resets a website user's password on the node at
// base, in dev mode (the link read from /dev/mail), as a browser would,
// and checks that the browser signed in before was signed out: what the
// reset links' bucket and the sessions bucket's sign-out need of NATS.
func resetThroughTheSite(t *testing.T, base string) {
	t.Helper()
	browser := func() *http.Client {
		jar, _ := cookiejar.New(nil)
		return &http.Client{Jar: jar, Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	send := func(c *http.Client, method, path string, form url.Values) (int, string, string) {
		t.Helper()
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, _ := http.NewRequest(method, base+path, body)
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Location"), string(data)
	}
	before := browser()
	if st, _, _ := send(before, "POST", "/signup", url.Values{"email": {"reset@example.com"}, "password": {"the first password"}, "password_again": {"the first password"}}); st != http.StatusSeeOther {
		t.Fatalf("sign-up: %d", st)
	}
	b := browser()
	if st, loc, _ := send(b, "POST", "/password/forgot", url.Values{"email": {"reset@example.com"}}); st != http.StatusSeeOther || loc != "/password/sent" {
		t.Fatalf("asking for a reset link: %d %s", st, loc)
	}
	var link string
	for deadline := time.Now().Add(20 * time.Second); link == ""; time.Sleep(50 * time.Millisecond) {
		_, _, page := send(b, "GET", "/dev/mail", nil)
		if m := devMailLink.FindStringSubmatch(page); m != nil {
			link = strings.ReplaceAll(m[1], "&amp;", "&")
		} else if time.Now().After(deadline) {
			t.Fatalf("no reset link at /dev/mail within 20s:\n%s", page)
		}
	}
	token := link[strings.Index(link, "token=")+len("token="):]
	st, loc, _ := send(b, "POST", "/password/reset", url.Values{"token": {token}, "password": {"the second password"}, "password_again": {"the second password"}})
	if st != http.StatusSeeOther || loc != "/password/changed" {
		t.Fatalf("the reset: %d %s", st, loc)
	}
	if st, _, _ := send(before, "GET", "/runs", nil); st != http.StatusSeeOther {
		t.Fatalf("the browser signed in before the reset still is: %d", st)
	}
}
