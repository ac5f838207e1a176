package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	. "github.com/apprun/apprun/node/nodetest"
)

// webBalance is an account's balance as the read model has it.
func webBalance(t *testing.T, h *Harness, accountID string) int64 {
	t.Helper()
	acct, err := h.Node.Reads().Account(accountID)
	if err != nil {
		t.Fatal(err)
	}
	return acct.Balance
}

// One table of input checks, run on every surface that creates a run: the
// REST API, an MCP tool call and the website's form. Each surface must
// refuse the same inputs (the API and MCP with the same error code; the
// website by going back to the form, post-redirect-get, with the reason),
// and a refused input must charge nothing.
func TestTheSameInputChecksOnEverySurface(t *testing.T) {
	h := Start(t, WithLimits(NoLimits), WithSignupCredits(1000))
	a := h.Account(1000)
	s, err := MCPConnect(t, h, a.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := h.Browser(t)
	b.SignUp("table@example.com")
	webAcct := AccountOfSession(t, h, b)

	long := strings.Repeat("x", 2001)
	cases := []struct {
		name  string
		input map[string]string
		code  string // "" = accepted
	}{
		{"valid", map[string]string{"product_description": "Acme invoices", "target_role": "CFOs"}, ""},
		{"required field missing", map[string]string{"product_description": "Acme invoices"}, "invalid_input"},
		{"empty required field", map[string]string{"product_description": "", "target_role": "CFOs"}, "invalid_input"},
		{"too long", map[string]string{"product_description": long, "target_role": "CFOs"}, "invalid_input"},
		{"a file as a data URI", map[string]string{"product_description": "data:text/plain;base64,QUJD", "target_role": "CFOs"}, "invalid_request"},
		{"not in the enum", map[string]string{"product_description": "Acme", "target_role": "CFOs", "cta_goal": "Shouting"}, "invalid_input"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			input := map[string]any{}
			form := url.Values{}
			for k, v := range c.input {
				input[k], form[k] = v, []string{v}
			}
			restBal, _ := h.Balance(a)
			webBal := webBalance(t, h, webAcct)

			// REST
			r := h.Do("POST", "/api/v1/runs", a.Key, map[string]any{"app_slug": "cold-email-writer", "input": input})
			switch {
			case c.code == "" && r.Status != 201:
				t.Errorf("REST: %d %s, want 201", r.Status, r.Body)
			case c.code != "" && (r.Status == 201 || r.ErrorCode(t) != c.code):
				t.Errorf("REST: %d %s, want %s", r.Status, r.Body, c.code)
			}
			// MCP
			res := CallTool(t, s, "cold-email-writer", input, nil)
			got := MustJSON(res.StructuredContent)
			switch {
			case c.code == "" && res.IsError:
				t.Errorf("MCP: %s, want a run", got)
			case c.code != "" && (!res.IsError || !strings.Contains(got, `"code":"`+c.code+`"`)):
				t.Errorf("MCP: %s, want %s", got, c.code)
			}
			// The website's form
			p := b.Post("/apps/cold-email-writer/runs", form)
			switch {
			case c.code == "" && p.Status != http.StatusSeeOther:
				t.Errorf("website: %d, want 303 to the run", p.Status)
			case c.code != "" && (p.Status != http.StatusSeeOther || !strings.HasPrefix(p.Location, "/apps/cold-email-writer")):
				t.Errorf("website: %d to %q, want the form again (%s)", p.Status, p.Location, c.code)
			case c.code != "" && !strings.Contains(b.Get(p.Location).Body, `class="problem" role="alert">The run was not started`):
				t.Errorf("website: the form again does not say the run was not started (%s)", c.code)
			}
			if c.code != "" {
				if bal, _ := h.Balance(a); bal != restBal {
					t.Errorf("API account charged for a refused input: %d → %d", restBal, bal)
				}
				if bal := webBalance(t, h, webAcct); bal != webBal {
					t.Errorf("website account charged for a refused input: %d → %d", webBal, bal)
				}
			}
		})
	}
}
