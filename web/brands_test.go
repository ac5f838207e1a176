package web_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	. "github.com/apprun/apprun/node/nodetest"
)

var brandID = regexp.MustCompile(`/settings/brands/(bc_[a-z2-7]+)/delete`)

// startTestRun sends the test App's form (mode ok) with extra fields and
// returns the answer.
func startTestRun(t *testing.T, b *Browser, extra url.Values) Page {
	t.Helper()
	tok := FormToken.FindStringSubmatch(b.Get("/apps/" + TestAppSlug).Body)
	if tok == nil {
		t.Fatal("no form on the test App's page")
	}
	form := url.Values{"idempotency_key": {tok[1]}, "mode": {"ok"}}
	for k, v := range extra {
		form[k] = v
	}
	return b.Post("/apps/"+TestAppSlug+"/runs", form)
}

// Brand contexts from the settings page: created, refused with each
// error beside its field in the field's own name, edited and deleted
// after asking; only their account sees or changes them.
func TestBrandContextsAreMadeEditedAndDeletedFromTheirPage(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits), WithSignupCredits(100))
	ann, bob := h.Browser(t), h.Browser(t)
	ann.SignUp("ann@example.com")
	bob.SignUp("bob@example.com")
	if p := ann.Get("/settings/brands"); p.Status != 200 || !strings.Contains(p.Body, "No brand contexts yet.") || !strings.Contains(p.Body, `href="/settings/brands" aria-current="page"`) {
		t.Fatalf("an empty brand contexts page: %d %s", p.Status, p.Body)
	}

	// Refused: the error names the field by its label, beside it, and
	// the values come back.
	for _, tc := range []struct {
		name string
		form url.Values
		want string
	}{
		{"no name", url.Values{"name": {"  "}, "voice": {"kept voice"}}, `id="be-name">Name is required.<`},
		{"a voice too long", url.Values{"name": {"Acme"}, "voice": {strings.Repeat("v", 1001)}}, `id="be-voice">Voice is too long: use at most 1,000 characters (this has 1,001).<`},
		{"a website in words", url.Values{"name": {"Acme"}, "voice": {"v"}, "website": {"javascript:alert(1)"}}, `id="be-website">Enter the website&#39;s full address, like https://acme.example.<`},
	} {
		p := ann.Post("/settings/brands", tc.form)
		if p.Status != http.StatusSeeOther || p.Location != "/settings/brands#create" {
			t.Fatalf("%s: %d %s", tc.name, p.Status, p.Location)
		}
		page := ann.Get("/settings/brands").Body
		if !strings.Contains(page, tc.want) || !strings.Contains(page, "1 field to fix below") || strings.Contains(page, "name:") ||
			!strings.Contains(page, tc.form.Get("voice")+"</textarea>") {
			t.Fatalf("%s: the page after the refusal lacks %q or the values:\n%s", tc.name, tc.want, page)
		}
	}

	if p := ann.Post("/settings/brands", url.Values{"name": {"Acme"}, "voice": {"plain"}, "website": {"https://acme.example"}}); p.Status != http.StatusSeeOther || p.Location != "/settings/brands" {
		t.Fatalf("create: %d %s", p.Status, p.Location)
	}
	list := ann.Get("/settings/brands").Body
	m := brandID.FindStringSubmatch(list)
	if m == nil || !strings.Contains(list, "Brand context “Acme” was created") || strings.Contains(list, "No brand contexts yet.") {
		t.Fatalf("the list after a create:\n%s", list)
	}
	id := m[1]

	// Another account's brand context is no brand context at all.
	for _, p := range []Page{bob.Get("/settings/brands/" + id), bob.Get("/settings/brands/" + id + "/delete"),
		bob.Post("/settings/brands/"+id, url.Values{"name": {"Bob's now"}}), bob.Post("/settings/brands/"+id+"/delete", url.Values{})} {
		if p.Status != 404 || !strings.Contains(p.Body, "no such brand context") {
			t.Fatalf("Bob at Ann's brand context: %d, want 404", p.Status)
		}
	}
	if strings.Contains(bob.Get("/settings/brands").Body, "Acme") {
		t.Fatal("Bob's list shows Ann's brand context")
	}

	// Edit: the form filled in; a refusal goes back to it; a save lists it.
	if p := ann.Get("/settings/brands/" + id); p.Status != 200 || !strings.Contains(p.Body, `value="https://acme.example"`) || !strings.Contains(p.Body, ">plain</textarea>") {
		t.Fatalf("the edit page: %d %s", p.Status, p.Body)
	}
	if p := ann.Post("/settings/brands/"+id, url.Values{"name": {""}, "voice": {"warm"}}); p.Status != http.StatusSeeOther || p.Location != "/settings/brands/"+id {
		t.Fatalf("a refused edit: %d %s", p.Status, p.Location)
	}
	if page := ann.Get("/settings/brands/" + id).Body; !strings.Contains(page, `id="be-name">Name is required.<`) || !strings.Contains(page, ">warm</textarea>") {
		t.Fatalf("the edit page after a refusal:\n%s", page)
	}
	if p := ann.Post("/settings/brands/"+id, url.Values{"name": {"Acme Ltd"}, "voice": {"warm"}}); p.Status != http.StatusSeeOther || p.Location != "/settings/brands" {
		t.Fatalf("save: %d %s", p.Status, p.Location)
	}
	if list := ann.Get("/settings/brands").Body; !strings.Contains(list, ">Acme Ltd</a>") || !strings.Contains(list, ">warm<") {
		t.Fatalf("the list after an edit:\n%s", list)
	}

	// Delete asks first, then the brand context is gone.
	confirm := ann.Get("/settings/brands/" + id + "/delete")
	if confirm.Status != 200 || !strings.Contains(confirm.Body, "Delete brand context “Acme Ltd”?") ||
		!strings.Contains(confirm.Body, `<form method="post" action="/settings/brands/`+id+`/delete"`) {
		t.Fatalf("the delete page: %d %s", confirm.Status, confirm.Body)
	}
	if p := ann.Post("/settings/brands/"+id+"/delete", url.Values{}); p.Status != http.StatusSeeOther {
		t.Fatalf("delete: %d", p.Status)
	}
	if list := ann.Get("/settings/brands").Body; strings.Contains(list, ">Acme Ltd</a>") || !strings.Contains(list, "No brand contexts yet.") {
		t.Fatalf("the list after a delete:\n%s", list)
	}
	if p := ann.Get("/settings/brands/" + id); p.Status != 404 {
		t.Fatalf("a deleted brand context's page: %d, want 404", p.Status)
	}
}

// The run form of an App that accepts a brand context picks one of the
// viewer's by name; the run uses it; one deleted meanwhile is refused
// beside the picker, nothing charged. Signed out there is no picker.
func TestTheRunFormPicksABrandContext(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits), WithSignupCredits(100))
	if page := h.Browser(t).Get("/apps/" + TestAppSlug).Body; strings.Contains(page, `name="brand_context_id"`) {
		t.Fatal("a signed-out visitor sees the brand context picker")
	}
	b := h.Browser(t)
	b.SignUp("picker@example.com")
	empty := b.Get("/apps/" + TestAppSlug).Body
	if !strings.Contains(empty, `<select id="f-brand_context_id" name="brand_context_id"`) || !strings.Contains(empty, `<a href="/settings/brands#create">create a brand context</a>`) {
		t.Fatalf("the picker with no brand contexts: want None and a link to make one:\n%s", empty)
	}
	if strings.Contains(b.Get("/apps/unpriced").Body, `name="brand_context_id"`) {
		t.Fatal("the picker is on the form of an App that takes no brand context")
	}
	b.Post("/settings/brands", url.Values{"name": {"Acme <Ltd>"}})
	b.Post("/settings/brands", url.Values{"name": {"Other"}})
	list := b.Get("/settings/brands").Body
	ids := brandID.FindAllStringSubmatch(list, -1)
	if len(ids) != 2 {
		t.Fatalf("%d brand contexts listed, want 2", len(ids))
	}
	acme := ids[1][1] // newest first: Other, then Acme
	form := b.Get("/apps/" + TestAppSlug).Body
	if !strings.Contains(form, `<option value="">None</option>`) || !strings.Contains(form, `<option value="`+acme+`">Acme &lt;Ltd&gt;</option>`) {
		t.Fatalf("the picker lacks None or Acme by name:\n%s", form)
	}

	p := startTestRun(t, b, url.Values{"brand_context_id": {acme}})
	if p.Status != http.StatusSeeOther || !strings.HasPrefix(p.Location, "/runs/run_") {
		t.Fatalf("a run with a brand context: %d %s", p.Status, p.Location)
	}
	runNo := strings.TrimPrefix(p.Location, "/runs/")
	if run, err := h.Node.Reads().Run(runNo); err != nil || run.BrandContextID != acme {
		t.Fatalf("the run's brand context: %q %v, want %s", run.BrandContextID, err, acme)
	}
	// The run's page names it among the inputs, and its API request
	// carries it: pasted, it makes the same run.
	if page := b.Get("/runs/" + runNo).Body; !strings.Contains(page, "<dt>Brand context</dt><dd><a href=\"/settings/brands/"+acme+"\">Acme &lt;Ltd&gt;</a></dd>") ||
		!strings.Contains(page, `&#34;brand_context_id&#34;: &#34;`+acme+`&#34;`) {
		t.Fatalf("the run's page does not name its brand context:\n%s", page)
	}
	// Run again keeps the choice.
	if again := b.Get("/apps/" + TestAppSlug + "?from=" + runNo).Body; !strings.Contains(again, `<option value="`+acme+`" selected>`) {
		t.Fatal("Run again did not keep the brand context")
	}
	// None is no brand context.
	p = startTestRun(t, b, url.Values{"brand_context_id": {""}})
	if run, err := h.Node.Reads().Run(strings.TrimPrefix(p.Location, "/runs/")); err != nil || run.BrandContextID != "" {
		t.Fatalf("a run with None: %q %v", run.BrandContextID, err)
	}

	// Deleted between the form and the run: refused beside the picker.
	b.Post("/settings/brands/"+acme+"/delete", url.Values{})
	p = startTestRun(t, b, url.Values{"brand_context_id": {acme}})
	if p.Status != http.StatusSeeOther || !strings.HasPrefix(p.Location, "/apps/"+TestAppSlug) {
		t.Fatalf("a run with a deleted brand context: %d %s", p.Status, p.Location)
	}
	page := b.Get("/apps/" + TestAppSlug).Body
	if !strings.Contains(page, `id="e-brand_context_id">This brand context is not on your account`) || strings.Contains(page, acme+`">Acme`) {
		t.Fatalf("the form after a deleted brand context:\n%s", page)
	}
	if page := b.Get("/runs/" + runNo).Body; !strings.Contains(page, "<dt>Brand context</dt><dd>one since deleted</dd>") {
		t.Fatalf("the run's page after its brand context was deleted:\n%s", page)
	}
	if !strings.Contains(b.Get("/credits").Body, `id="balance">80 Credits<`) {
		t.Fatal("a refused run was charged (want 100 less the two runs' 10 each)")
	}
}
