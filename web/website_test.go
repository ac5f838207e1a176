package web_test

import (
	"encoding/csv"
	"encoding/json"
	"html"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"

	"github.com/apprun/apprun/apps"
	"github.com/apprun/apprun/internal/logbuf"
	"github.com/apprun/apprun/llm/llmtest"
)

// Issue 18, bug 1: creating a key answers with a redirect; the page it
// lands on shows the key once, and a reload makes and shows nothing.
func TestReloadingTheNewKeyPageMakesNoKeyAndShowsNoKey(t *testing.T) {
	h := Start(t, WithLimits(NoLimits), WithSignupCredits(100))
	b := h.Browser(t)
	b.SignUp("keys@example.com")
	key := b.CreateKey("reload-test")
	again := b.Get("/settings/keys")
	if again.Status != 200 || strings.Contains(again.Body, key) || strings.Contains(again.Body, `id="new-key"`) {
		t.Fatalf("a reload shows the key again: %d", again.Status)
	}
	if n := strings.Count(again.Body, "reload-test"); n != 1 {
		t.Fatalf("%d keys named reload-test after a reload, want 1", n)
	}
	// A refused run form goes back to its page too: a reload there posts
	// nothing.
	p := b.Post("/apps/cold-email-writer/runs", url.Values{"product_description": {""}, "target_role": {"x"}})
	if p.Status != http.StatusSeeOther || !strings.HasPrefix(p.Location, "/apps/cold-email-writer") {
		t.Fatalf("a refused run form: %d %s, want a redirect to the App's page", p.Status, p.Location)
	}
}

// A run form's field with bytes that are not UTF-8 (a hostile client's:
// a browser sends the page's UTF-8) is refused beside its field, nothing
// charged: decoded leniently it would run, and be paid for, as U+FFFD.
func TestARunFormFieldThatIsNotUTF8IsRefused(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits), WithSignupCredits(100))
	b := h.Browser(t)
	b.SignUp("latin1@example.com")
	p := b.Post("/apps/cold-email-writer/runs", url.Values{"product_description": {"Acme caf\xe9 ledger"}, "target_role": {"Founders"}})
	if p.Status != http.StatusSeeOther {
		t.Fatalf("refused form: %d", p.Status)
	}
	page := b.Get("/apps/cold-email-writer").Body
	for _, want := range []string{`id="e-product_description">Use text in UTF-8: this has a byte that is not.<`, "1 field to fix below. Nothing was charged."} {
		if !strings.Contains(page, want) {
			t.Fatalf("the form after a refusal lacks %q", want)
		}
	}
	if !strings.Contains(b.Get("/credits").Body, `id="balance">100 Credits<`) {
		t.Fatal("a refused form charged")
	}
}

// The static files are served as files only: their directory is not
// listed, and a missing one is the site's own 404 page (http.FileServer
// listed /static/ and answered a plain-text "404 page not found"). A
// method a page does not take is the site's page too, not an empty 405.
func TestStaticFilesAreFilesOnlyAndRefusalsArePages(t *testing.T) {
	t.Parallel()
	h := Start(t)
	b := h.Browser(t)
	if p := b.Get("/static/style.css"); p.Status != 200 || !strings.HasPrefix(p.Header.Get("Content-Type"), "text/css") {
		t.Fatalf("/static/style.css: %d %q", p.Status, p.Header.Get("Content-Type"))
	}
	for _, m := range []string{"PUT", "DELETE", "PATCH"} {
		if p := b.Send(m, "/apps", nil); p.Status != 405 || !strings.Contains(p.Body, "This page does not take that kind of request ("+m+").") {
			t.Errorf("%s /apps: %d %q, want the site's page saying so", m, p.Status, p.Body)
		}
	}
	for _, path := range []string{"/static/", "/static/nope.css", "/static/style.css/x"} {
		p := b.Get(path)
		if p.Status != 404 || !strings.Contains(p.Body, "There is no page here.") || strings.Contains(p.Body, "style.css</a>") {
			t.Errorf("%s: %d %q %.120s, want the site's 404 page", path, p.Status, p.Header.Get("Content-Type"), p.Body)
		}
	}
}

// A form the edge refuses before the site sees it (larger than 64 KiB: a
// long paste into a field) is the site's page saying so, with the site's
// headers, not the API's JSON envelope shown raw in the browser; nothing
// is charged.
func TestAFormTheEdgeRefusesIsTheSitesPage(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits), WithSignupCredits(100))
	b := h.Browser(t)
	b.SignUp("paste@example.com")
	p := b.Post("/apps/cold-email-writer/runs", url.Values{"product_description": {strings.Repeat("x", 70<<10)}, "target_role": {"Founders"}})
	if p.Status != 400 || !strings.HasPrefix(p.Header.Get("Content-Type"), "text/html") || !strings.Contains(p.Body, "64 KiB") ||
		p.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("a 70 KiB form: %d %q (CSP %q) %.300s, want the site's 400 page naming the limit", p.Status,
			p.Header.Get("Content-Type"), p.Header.Get("Content-Security-Policy"), p.Body)
	}
	if !strings.Contains(b.Get("/credits").Body, `id="balance">100 Credits<`) {
		t.Fatal("a refused form charged")
	}
}

// Issue 18, bug 6: a field error is shown beside its field, in plain
// words, marked for screen readers, with every value kept; nothing is
// charged.
func TestARefusedRunFormShowsEachErrorBesideItsFieldAndKeepsTheValues(t *testing.T) {
	h := Start(t, WithLimits(NoLimits), WithSignupCredits(100))
	b := h.Browser(t)
	b.SignUp("form@example.com")
	long := strings.Repeat("r", 501)
	p := b.Post("/apps/cold-email-writer/runs", url.Values{"product_description": {"  "}, "target_role": {long},
		"proof_points": {"kept <as typed>"}, "cta_goal": {"Meeting"}})
	if p.Status != http.StatusSeeOther {
		t.Fatalf("refused form: %d", p.Status)
	}
	page := b.Get("/apps/cold-email-writer").Body
	for _, want := range []string{
		`id="e-product_description">Enter your product: it is required.<`,
		`id="e-target_role">Use at most 500 characters; this has 501.<`,
		`aria-invalid="true" aria-describedby="d-product_description e-product_description"`,
		`>` + long + `</textarea>`, `kept &lt;as typed&gt;</textarea>`, `<option selected>Meeting</option>`,
		"2 fields to fix below. Nothing was charged.",
	} {
		if !strings.Contains(page, want) {
			t.Fatalf("the form after a refusal lacks %q", want)
		}
	}
	for _, raw := range []string{"should be at most", "Required properties", "input."} {
		if strings.Contains(page, raw) {
			t.Fatalf("validator text %q on the page", raw)
		}
	}
	if strings.Contains(b.Get("/apps/cold-email-writer").Body, "e-target_role") {
		t.Fatal("the errors show again on a reload")
	}
	if !strings.Contains(b.Get("/credits").Body, `id="balance">100 Credits<`) {
		t.Fatal("a refused form charged")
	}
}

// Issue 18, bugs 4 and 9: a run is canceled from its page, which then
// shows the refund; the cancel is logged once, at INFO, never as an error.
func TestCancelFromTheRunPageShowsTheRefundAndLogsNoError(t *testing.T) {
	var logs logbuf.Buffer
	h := Start(t, WithLimits(NoLimits), WithSignupCredits(100),
		WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))))
	b := h.Browser(t)
	b.SignUp("cancel@example.com")
	tok := FormToken.FindStringSubmatch(b.Get("/apps/" + TestAppSlug).Body)
	p := b.Post("/apps/"+TestAppSlug+"/runs", url.Values{"idempotency_key": {tok[1]}, "mode": {"hold"}})
	if p.Status != http.StatusSeeOther {
		t.Fatalf("start: %d %s", p.Status, p.Body)
	}
	runNo := strings.TrimPrefix(p.Location, "/runs/")
	if page := b.Get(p.Location).Body; !strings.Contains(page, `action="/runs/`+runNo+`/cancel"`) {
		t.Fatal("no cancel button on an active run's page")
	}
	// Cancel asks once: a post that has not been confirmed is shown the
	// question, and the run goes on.
	if c := b.Post("/runs/"+runNo+"/cancel", url.Values{}); c.Status != http.StatusSeeOther || c.Location != "/runs/"+runNo+"/cancel" {
		t.Fatalf("an unconfirmed cancel: %d %s", c.Status, c.Location)
	}
	ask := b.Get("/runs/" + runNo + "/cancel").Body
	if !strings.Contains(ask, "Cancel this Test App run?") || !strings.Contains(ask, "It is refunded in full (10 Credits)") ||
		!strings.Contains(ask, `name="confirm" value="yes"`) {
		t.Fatalf("the question: %s", ask)
	}
	if !strings.Contains(b.Get("/runs/"+runNo).Body, ">queued<") && !strings.Contains(b.Get("/runs/"+runNo).Body, ">running<") {
		t.Fatal("the run stopped before the cancel was confirmed")
	}
	c := b.Post("/runs/"+runNo+"/cancel", url.Values{"confirm": {"yes"}})
	if c.Status != http.StatusSeeOther || c.Location != "/runs/"+runNo {
		t.Fatalf("cancel: %d %s", c.Status, c.Location)
	}
	page := b.Get(c.Location).Body
	for _, want := range []string{`id="refund" role="status">This run was canceled; 10 Credits were refunded.`, ">canceled</span>\n · 10 Credits, refunded</p>"} {
		if !strings.Contains(page, want) {
			t.Fatalf("the run page after a cancel lacks %q", want)
		}
	}
	if strings.Contains(page, `/cancel"`) {
		t.Fatal("a canceled run still offers a cancel")
	}
	if !strings.Contains(b.Get("/credits").Body, `id="balance">100 Credits<`) {
		t.Fatal("the cancel did not refund")
	}
	h.ReleaseHeld()
	// The executor logs the cancel when it meets it, after the answer:
	// wait for that before stopping the node, which would stop it first.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "run canceled by its owner"); {
		if time.Now().After(deadline) {
			t.Fatalf("the executor never logged the cancel:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.Stop()
	out := logs.String()
	if strings.Contains(out, "level=ERROR") || strings.Count(out, "run canceled by its owner") != 1 {
		t.Fatalf("want the cancel logged once at INFO and no error:\n%s", out)
	}
}

// Run again opens the App's form filled in with the run's input; the run
// page shows the inputs, the timing, the step log and the API call.
func TestTheRunPageShowsItsInputsStepsAndRunsAgain(t *testing.T) {
	h := Start(t, WithLimits(NoLimits), WithSignupCredits(100))
	b := h.Browser(t)
	b.SignUp("again@example.com")
	runNo := b.StartColdEmail()
	h.WaitRunDone(runNo)
	page := b.Get("/runs/" + runNo).Body
	for _, want := range []string{"Your product", "Acme Ledger automates bookkeeping.", "Who you are writing to", "Agency founders",
		"<dt>Ran</dt>", "<dt>In all</dt>", `class="steps"`, `href="/apps/cold-email-writer?from=` + runNo + `#run-form"`,
		"/api/v1/runs/" + runNo + ` -H "Authorization: Bearer $API_KEY"`, "← Back to runs",
		`href="/runs/` + runNo + `/record.json"`, "Download record"} {
		if !strings.Contains(page, want) {
			t.Fatalf("the run page lacks %q\n%s", want, page)
		}
	}
	form := b.Get("/apps/cold-email-writer?from=" + runNo).Body
	if !strings.Contains(form, `>Acme Ledger automates bookkeeping.</textarea>`) || !strings.Contains(form, "Filled in from run") {
		t.Fatal("Run again does not fill the form in")
	}
	// Download record: the run's record document, to keep.
	rec := b.Get("/runs/" + runNo + "/record.json")
	var doc struct {
		RecordVersion int `json:"record_version"`
		Run           struct {
			RunNo string `json:"run_no"`
		} `json:"run"`
		HeadHash string `json:"head_hash"`
		Steps    []any  `json:"steps"`
	}
	if rec.Status != 200 || json.Unmarshal([]byte(rec.Body), &doc) != nil || doc.RecordVersion != 1 || doc.Run.RunNo != runNo ||
		doc.HeadHash == "" || len(doc.Steps) == 0 {
		t.Fatalf("download record: %d %.300s", rec.Status, rec.Body)
	}
	// Another account cannot fill a form from this run, nor download it.
	other := h.Browser(t)
	other.SignUp("other@example.com")
	if p := other.Get("/runs/" + runNo + "/record.json"); p.Status != 404 || strings.Contains(p.Body, "Acme Ledger") {
		t.Fatalf("another account's record: %d", p.Status)
	}
	if strings.Contains(other.Get("/apps/cold-email-writer?from="+runNo).Body, "Acme Ledger automates bookkeeping.</textarea>") {
		t.Fatal("another account's run filled the form")
	}
}

// Issue 18, bug 7: revoking asks first, then says it was done; revoked
// keys are listed after the active ones.
func TestRevokingAKeyAsksFirstAndSaysSo(t *testing.T) {
	h := Start(t, WithLimits(NoLimits), WithSignupCredits(100))
	b := h.Browser(t)
	b.SignUp("revoke@example.com")
	b.CreateKey("first")
	b.CreateKey("second")
	list := b.Get("/settings/keys").Body
	id := regexp.MustCompile(`href="/settings/keys/(key_[a-z0-9]+)/revoke"`).FindStringSubmatch(list)
	if id == nil || strings.Contains(list, `method="post" action="/settings/keys/key_`) {
		t.Fatal("the list revokes in one click instead of linking to a confirmation")
	}
	confirm := b.Get("/settings/keys/" + id[1] + "/revoke")
	if confirm.Status != 200 || !strings.Contains(confirm.Body, `action="/settings/keys/`+id[1]+`/revoke"`) || !strings.Contains(confirm.Body, "cannot be undone") {
		t.Fatalf("confirmation page: %d", confirm.Status)
	}
	if p := b.Post("/settings/keys/"+id[1]+"/revoke", url.Values{}); p.Status != http.StatusSeeOther {
		t.Fatalf("revoke: %d", p.Status)
	}
	after := b.Get("/settings/keys").Body
	if !strings.Contains(after, "was revoked: it no longer works on the API.") {
		t.Fatal("no message after revoking")
	}
	if a, r := strings.Index(after, ">active<"), strings.Index(after, `class="revoked"`); a < 0 || r < 0 || r < a {
		t.Fatal("revoked keys are not listed below the active ones")
	}
	if strings.Contains(b.Get("/settings/keys").Body, "was revoked") {
		t.Fatal("the message shows again on a reload")
	}
}

// Issue 18, bug 8, and the pages around the forms.
func TestPagesSayThingsRight(t *testing.T) {
	h := Start(t, WithLimits(NoLimits), WithSignupCredits(1))
	b := h.Browser(t)
	home := b.Get("/").Body
	if strings.Contains(home, "<title>apprun · apprun</title>") || !strings.Contains(home, "Cold Email Writer") || !strings.Contains(home, "three steps") {
		t.Fatal("the landing page: a doubled title, or no Apps and first steps")
	}
	if !strings.Contains(home, "1 Credit to start") {
		t.Fatal("plural: want '1 Credit'")
	}
	if p := b.Get("/favicon.ico"); p.Status != 200 || p.Header.Get("Content-Type") != "image/svg+xml" {
		t.Fatalf("favicon: %d %s", p.Status, p.Header.Get("Content-Type"))
	}
	nf := b.Get("/no-such-page").Body
	if h1, msg := strings.Index(nf, "<h1>"), strings.Index(nf, "There is no page here."); h1 < 0 || msg < h1 {
		t.Fatal("the 404 page puts its message above its heading")
	}
	p := b.SignUp("pages@example.com")
	if p.Location != "/apps?welcome=1" || !strings.Contains(b.Get(p.Location).Body, "create your API key") {
		t.Fatal("sign-up does not land on the Apps page with the key hint")
	}
	if out := b.Get("/signout"); out.Status != 200 || !strings.Contains(out.Body, `<form method="post" action="/signout"><button type="submit">Sign out</button>`) {
		t.Fatalf("GET /signout: %d", out.Status)
	}
	credits := b.Get("/credits").Body
	if !strings.Contains(credits, `id="header-balance">1<`) || !strings.Contains(credits, `id="balance">1 Credit<`) {
		t.Fatal("the balance in the header, or its plural")
	}
	if strings.Contains(b.Get("/runs").Body, "Settings → API Keys") {
		t.Fatal("the nav still reads as a breadcrumb")
	}
	// An App page shows its example output rendered, not as JSON.
	if page := b.Get("/apps/cold-email-writer").Body; !strings.Contains(page, "<h2>Example output</h2>") ||
		!strings.Contains(page, `<h3>Emails</h3>`) || strings.Contains(page, `&#34;send_day&#34;`) {
		t.Fatal("the App page does not show its example output rendered")
	}
	// The App list is grouped by category, as the capability list says.
	if apps := b.Get("/apps").Body; !strings.Contains(apps, `<h2 id="cat-outbound-email">Outbound email</h2>`) || !strings.Contains(apps, `href="#cat-outbound-email"`) {
		t.Fatal("the App list is not grouped by category")
	}
	a := h.Account(10)
	if c := h.Do("GET", "/api/v1/capabilities/cold-email-writer", a.Key, nil).JSON(t); c["category"] != "Outbound email" {
		t.Fatalf("capability category: %v", c["category"])
	}
	// Short of Credits: the form says so, and what to do next.
	tok := FormToken.FindStringSubmatch(b.Get("/apps/cold-email-writer").Body)
	if p := b.Post("/apps/cold-email-writer/runs", url.Values{"idempotency_key": {tok[1]}, "product_description": {"x"}, "target_role": {"y"}}); p.Status != http.StatusSeeOther {
		t.Fatalf("a run without the Credits: %d", p.Status)
	}
	if page := b.Get("/apps/cold-email-writer").Body; !strings.Contains(page, "Nothing was charged. See your balance under Credits.") || !strings.Contains(page, "ask them for more") {
		t.Fatal("a refusal for Credits does not say what to do next")
	}
}

// The run history names Apps, filters by status and pages; the statement
// names the App of each run, filters by date and exports CSV.
func TestRunsAndStatementFilterPageAndExport(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits), WithSignupCredits(10_000))
	b := h.Browser(t)
	b.SignUp("lists@example.com")
	var runs []string
	for range 27 {
		runs = append(runs, b.StartColdEmail())
	}
	for _, r := range runs {
		h.WaitRunDone(r)
	}
	first := b.Get("/runs").Body
	if strings.Count(first, `<a href="/runs/run_`) != 25 || !strings.Contains(first, "Cold Email Writer") {
		t.Fatalf("page 1: %d runs", strings.Count(first, `<a href="/runs/run_`))
	}
	if strings.Contains(first, ">← Newest runs</a>") {
		t.Fatal("the first page links to the newest page")
	}
	next := regexp.MustCompile(`href="(/runs\?[^"]+)" rel="next"`).FindStringSubmatch(first)
	if next == nil {
		t.Fatal("no next page")
	}
	second := b.Get(strings.ReplaceAll(next[1], "&amp;", "&")).Body
	if n := strings.Count(second, `<a href="/runs/run_`); n != 2 || !strings.Contains(second, runs[0]) || !strings.Contains(second, ">← Newest runs</a>") {
		t.Fatalf("page 2: %d runs", n)
	}
	if failed := b.Get("/runs?status=failed").Body; !strings.Contains(failed, "No runs match this filter.") {
		t.Fatal("the failed filter shows runs")
	}
	credits := b.Get("/credits").Body
	if !strings.Contains(credits, "Charge · Cold Email Writer") {
		t.Fatal("statement lines do not name the App")
	}
	if empty := b.Get("/credits?from=2001-01-01&to=2001-01-02").Body; !strings.Contains(empty, "Nothing in these dates.") {
		t.Fatal("the date filter")
	}
	resp := b.Get("/credits/statement.csv")
	rows, err := csv.NewReader(strings.NewReader(resp.Body)).ReadAll()
	if err != nil || resp.Header.Get("Content-Type") != "text/csv; charset=utf-8" || len(rows) != 1+1+27 ||
		strings.Join(rows[0], ",") != "time_utc,type,amount,balance,run_no,app,reference" || rows[1][5] != "Cold Email Writer" {
		t.Fatalf("CSV: %v, %d rows, %v", err, len(rows), rows[:min(2, len(rows))])
	}
}

// With a model, the website lists all 63 Apps under their categories,
// and every App page shows its example output rendered: the example's
// text on the page, no JSON member names in quotes.
func TestEveryAppPageShowsItsExampleOutputRendered(t *testing.T) {
	t.Parallel()
	fake := llmtest.New()
	defer fake.Close()
	h := Start(t, WithModel(fake))
	b := h.Browser(t)
	b.SignUp("catalog@example.com")
	defs, err := apps.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	list := b.Get("/apps").Body
	for _, c := range apps.Categories {
		if !strings.Contains(list, ">"+html.EscapeString(c)+"</h2>") {
			t.Errorf("the App list has no heading for the category %q", c)
		}
	}
	for _, d := range defs {
		if !strings.Contains(list, `href="/apps/`+d.Slug+`"`) {
			t.Errorf("the App list does not link %s", d.Slug)
		}
		page := b.Get("/apps/" + d.Slug)
		var out map[string]any
		_ = json.Unmarshal(d.Examples[0].Output, &out)
		text := firstText(out)
		if page.Status != 200 || !strings.Contains(page.Body, "<h2>Example output</h2>") ||
			!strings.Contains(page.Body, html.EscapeString(text)) {
			t.Errorf("%s: the App page (%d) does not show its example output's %q", d.Slug, page.Status, text)
		}
		_, shown, _ := strings.Cut(page.Body, "<h2>Example output</h2>")
		shown, _, _ = strings.Cut(shown, "<h2")
		for k := range out {
			if strings.Contains(shown, "&#34;"+k+"&#34;:") || strings.Contains(shown, `"`+k+`":`) {
				t.Errorf("%s: the example output is shown as JSON (%q)", d.Slug, k)
			}
		}
	}
}

// firstText is the first line of the first string in an example output,
// members taken in name order.
func firstText(v any) string {
	switch v := v.(type) {
	case string:
		line, _, _ := strings.Cut(v, "\n")
		return line
	case []any:
		for _, e := range v {
			if s := firstText(e); s != "" {
				return s
			}
		}
	case map[string]any:
		keys := slices.Sorted(maps.Keys(v))
		for _, k := range keys {
			if s := firstText(v[k]); s != "" {
				return s
			}
		}
	}
	return ""
}

// The Credits page and its CSV name a run's App after the run expired:
// the ledger keeps it on the charge.
func TestTheStatementNamesTheAppOfAnExpiredRun(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits), WithSignupCredits(100), WithRetention(TestAppSlug, 200*time.Millisecond))
	b := h.Browser(t)
	b.SignUp("expired@example.com")
	a := Account{ID: AccountOfSession(t, h, b), Key: b.CreateKey("runs")}
	run := h.Create(a, RunTestApp("ok"))
	h.WaitRun(a, run)
	deadline := time.Now().Add(15 * time.Second)
	for h.Do("GET", "/api/v1/runs/"+run, a.Key, nil).Status != 404 {
		if time.Now().After(deadline) {
			t.Fatalf("run %s did not expire", run)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if page := b.Get("/credits").Body; !strings.Contains(page, "Test App") {
		t.Fatalf("the Credits page does not name the expired run's App:\n%s", page)
	}
	if csvBody := b.Get("/credits/statement.csv").Body; !strings.Contains(csvBody, ","+run+",Test App,") {
		t.Fatalf("the statement CSV does not name the expired run's App:\n%s", csvBody)
	}
}

// Two runs side by side (issue 46): the run page links the comparison,
// which lists the App's other runs, then marks what differs.
func TestTwoRunsSideBySide(t *testing.T) {
	h := Start(t, WithLimits(NoLimits), WithSignupCredits(100))
	b := h.Browser(t)
	b.SignUp("compare@example.com")
	first := b.StartColdEmail()
	h.WaitRunDone(first)
	second := b.StartColdEmail()
	h.WaitRunDone(second)
	if page := b.Get("/runs/" + second).Body; !strings.Contains(page, `href="/runs/`+second+`/compare"`) {
		t.Fatal("the run page does not link the comparison")
	}
	pick := b.Get("/runs/" + second + "/compare").Body
	if !strings.Contains(pick, `href="/runs/`+second+`/compare?with=`+first+`"`) {
		t.Fatalf("the comparison does not offer the other run:\n%s", pick)
	}
	side := b.Get("/runs/" + second + "/compare?with=" + first)
	for _, want := range []string{`<table class="compare">`, first, second, "Your product", "Acme Ledger automates bookkeeping.", "Input (the same)", "none (built-in)"} {
		if side.Status != 200 || !strings.Contains(side.Body, want) {
			t.Fatalf("the comparison (%d) lacks %q:\n%s", side.Status, want, side.Body)
		}
	}
	other := h.Browser(t)
	other.SignUp("nosy@example.com")
	if p := other.Get("/runs/" + second + "/compare?with=" + first); p.Status != 404 || strings.Contains(p.Body, "Acme Ledger") {
		t.Fatalf("another account's comparison: %d", p.Status)
	}
}

// Where buying is not turned on, the credits page and a run refused for
// want of Credits say so in the customer's words: never an admin
// command.
func TestWithoutBuyingTheCustomerIsToldInTheirWords(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits), WithSignupCredits(10))
	b := h.Browser(t)
	b.SignUp("few@example.com")
	credits := b.Get("/credits").Body
	if !strings.Contains(credits, "Buying Credits here is not turned on") {
		t.Fatalf("the credits page does not say buying is off:\n%s", credits)
	}
	if p := b.Post("/apps/cold-email-writer/runs", url.Values{"product_description": {"Acme"}, "target_role": {"Founders"}}); p.Status != http.StatusSeeOther {
		t.Fatalf("a run form with too few Credits: %d", p.Status)
	}
	form := b.Get("/apps/cold-email-writer").Body
	if !strings.Contains(form, "ask them for more") {
		t.Fatalf("the refused form does not say where Credits come from:\n%s", form)
	}
	for page, body := range map[string]string{"/credits": credits, "the refused run form": form} {
		if strings.Contains(body, "apprun admin") {
			t.Errorf("%s names an admin command", page)
		}
	}
}
