package web_test

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"
)

// The usage page and the home card show what the account's runs spent
// in the last 30 days, per day and per App, as charts with the same
// numbers in tables; a refunded run spends nothing and grants are not
// spending. A new account sees the first-run guide at the top of its
// home instead, and empty states.
func TestUsageShowsWhatRunsSpentPerDayAndPerApp(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits), WithSignupCredits(1000))
	if p := h.Browser(t).Get("/usage"); p.Status != http.StatusSeeOther || !strings.HasPrefix(p.Location, "/signin?next=") {
		t.Fatalf("signed-out /usage: %d %s", p.Status, p.Location)
	}
	b := h.Browser(t)
	b.SignUp("usage@example.com")

	home := b.Get("/")
	guide, balance := strings.Index(home.Body, "A first run in three steps"), strings.Index(home.Body, `id="dashboard-balance">1,000 Credits<`)
	if home.Status != 200 || guide < 0 || balance < 0 || guide > balance {
		t.Fatalf("a new account's home (%d): want the first-run guide above the balance:\n%s", home.Status, home.Body)
	}
	for _, want := range []string{"No Credits spent in the last 30 days.", "No runs yet", `href="/usage"`} {
		if !strings.Contains(home.Body, want) {
			t.Errorf("a new account's home lacks %q", want)
		}
	}
	empty := b.Get("/usage").Body
	if !strings.Contains(empty, "No Credits spent in the last 30 days.") || strings.Contains(empty, "<svg") {
		t.Fatalf("a new account's usage page: want the empty state and no chart:\n%s", empty)
	}

	// Two test runs (10 each), one that fails and is refunded, and a
	// cold email (25): 45 Credits spent on 3 runs.
	a := Account{ID: AccountOfSession(t, h, b), Key: b.CreateKey("runs")}
	for _, mode := range []string{"ok", "ok", "fail"} {
		h.WaitRun(a, h.Create(a, RunTestApp(mode)))
	}
	email := b.StartColdEmail()
	h.WaitRunDone(email)
	WaitFor(t, 10*time.Second, "the refund", func() bool { bal, _ := h.Balance(a); return bal == 1000-45 })

	page := b.Get("/usage")
	today := time.Now().UTC().Format("2006-01-02")
	for _, want := range []string{
		`<a href="/usage" aria-current="page">Usage</a>`,
		`id="usage-total">45 Credits</strong> spent on 3 runs`,
		`<svg class="chart day-chart" viewBox="0 0 480 190" role="img" aria-labelledby="day-chart-title day-chart-desc"`,
		`<title id="day-chart-title">Credits spent per day`, `<desc id="day-chart-desc">45 Credits spent in the 30 days`,
		`<svg class="chart app-chart"`, `<title>Cold Email Writer: 25 Credits</title>`, `<title>Test App: 20 Credits</title>`,
		`<th scope="col">Day (UTC)</th>`, `<a href="/credits?from=` + today + `&amp;to=` + today + `">`,
		`<td data-label="App"><a href="/apps/test-app">Test App</a></td>
<td data-label="Runs" class="num">2</td><td data-label="Credits spent" class="num">20</td>`,
	} {
		if page.Status != 200 || !strings.Contains(page.Body, want) {
			t.Errorf("the usage page (%d) lacks %q", page.Status, want)
		}
	}
	if n := strings.Count(page.Body, `<td data-label="Day">`); n != 30 {
		t.Errorf("the per-day table has %d days, want 30 (days with nothing as 0)", n)
	}
	if n := strings.Count(page.Body, `<td data-label="Runs" class="num">0</td><td data-label="Credits spent" class="num">0</td>`); n != 29 {
		t.Errorf("%d days show 0, want the 29 before today", n)
	}
	if !strings.Contains(page.Body, `<td data-label="Runs" class="num">3</td><td data-label="Credits spent" class="num">45</td></tr>`) {
		t.Error("today's row does not show 3 runs and 45 Credits")
	}

	// The same numbers as the statement: today's charges less refunds.
	rows, err := csv.NewReader(strings.NewReader(b.Get("/credits/statement.csv?from=" + today + "&to=" + today).Body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var spent int64
	for _, r := range rows[1:] {
		if n, _ := strconv.ParseInt(r[2], 10, 64); r[1] == "charge" || r[1] == "refund" {
			spent -= n
		}
	}
	if spent != 45 {
		t.Errorf("the statement's charges less refunds today: %d, the usage page says 45", spent)
	}

	dashboard := b.Get("/").Body
	for _, want := range []string{`id="usage-total">45 Credits</strong> on 3 runs`, `<svg class="chart card-chart"`, `id="dashboard-balance">955 Credits<`,
		`<a href="/runs/` + email + `">Cold Email Writer</a>`, `<a href="/runs">All runs</a>`, `<span class="hint">refunded</span>`} {
		if !strings.Contains(dashboard, want) {
			t.Errorf("the home dashboard lacks %q", want)
		}
	}
	if strings.Contains(dashboard, "A first run in three steps") {
		t.Error("the home of an account with runs still shows the first-run guide")
	}
	// Signing in lands on the dashboard.
	if p := h.Browser(t).Post("/signin", url.Values{"email": {"usage@example.com"}, "password": {WebPassword}}); p.Status != http.StatusSeeOther || p.Location != "/" {
		t.Fatalf("sign-in lands on %d %s, want the dashboard", p.Status, p.Location)
	}
}

// The home dashboard lists the latest 5 runs, newest first.
func TestTheDashboardListsTheLatestFiveRuns(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits), WithSignupCredits(1000))
	b := h.Browser(t)
	b.SignUp("five@example.com")
	a := Account{ID: AccountOfSession(t, h, b), Key: b.CreateKey("runs")}
	var runs []string
	for range 6 {
		runs = append(runs, h.Create(a, RunTestApp("ok")))
	}
	home := b.Get("/").Body
	if strings.Contains(home, runs[0]) || !strings.Contains(home, runs[5]) || strings.Count(home, `<a href="/runs/run_`) != 5 {
		t.Fatalf("the dashboard should list runs 2 to 6 of 6:\n%s", home)
	}
	if strings.Index(home, runs[5]) > strings.Index(home, runs[1]) {
		t.Error("the dashboard lists the runs oldest first")
	}
}

// The statement pages by its lines' places in the log: a page holds the
// same lines after new ones come, the next page's link keeps the date
// range, and so does the CSV's; dates that are not dates, or a range that
// ends before it starts, are said in words.
func TestTheStatementPagesStablyWithinADateRange(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits), WithSignupCredits(100))
	b := h.Browser(t)
	b.SignUp("statement@example.com")
	id := AccountOfSession(t, h, b)
	grant := func(i int) {
		t.Helper()
		if r := h.Do("POST", "/admin/v1/accounts/"+id+"/credits", AdminToken, map[string]any{"reason": fmt.Sprintf("grant %02d", i), "amount": 1}); r.Status >= 300 {
			t.Fatalf("grant: %d %s", r.Status, r.Body)
		}
	}
	for i := 1; i <= 60; i++ {
		grant(i)
	}
	today := time.Now().UTC().Format("2006-01-02")
	rng := "from=" + today + "&to=" + today
	first := b.Get("/credits?" + rng).Body
	older := regexp.MustCompile(`<a href="(/credits\?[^"]+)" rel="next">`).FindStringSubmatch(first)
	if n := strings.Count(first, `<td data-label="When">`); n != 50 || older == nil || strings.Contains(first, ">Newest</a>") {
		t.Fatalf("page 1: %d lines, want 50 and a link to older ones", n)
	}
	if !strings.Contains(first, "· grant 60</td>") || !strings.Contains(first, "· grant 11</td>") || strings.Contains(first, "· grant 10</td>") {
		t.Fatal("page 1 is not the newest 50 lines")
	}
	if !strings.Contains(first, `href="/credits/statement.csv?`+strings.ReplaceAll(rng, "&", "&amp;")+`"`) {
		t.Error("the CSV link does not carry the date range")
	}
	next := strings.ReplaceAll(older[1], "&amp;", "&")
	if !strings.Contains(next, "from="+today) || !strings.Contains(next, "to="+today) {
		t.Errorf("the next page's link %s drops the date range", next)
	}
	grant(61) // a line after page 1 was shown shifts no page
	second := b.Get(next).Body
	if n := strings.Count(second, `<td data-label="When">`); n != 11 || !strings.Contains(second, "· grant 10</td>") ||
		!strings.Contains(second, "Opening grant") || strings.Contains(second, "· grant 11</td>") || !strings.Contains(second, ">Newest</a>") ||
		!strings.Contains(b.Get("/credits").Body, `href="/credits/statement.csv" id="csv"`) {
		t.Fatalf("page 2 after a new line: %d lines, want grants 10 to 1 and the opening grant:\n%s", n, second)
	}
	if strings.Contains(second, `rel="next"`) {
		t.Error("the last page links to another")
	}

	for _, tc := range []struct{ query, says string }{
		{"from=2026-13-01", "The From date &#34;2026-13-01&#34; is not a date: write it like 2026-11-23"},
		{"from=" + today + "&to=yesterday", "The To date &#34;yesterday&#34; is not a date"},
		{"from=2026-05-02&to=2026-05-01", "The From date (2026-05-02) is after the To date (2026-05-01), so no line can fall between them"},
		{"from=x&to=y", "The From date &#34;x&#34; is not a date: write it like 2026-11-23 (year, month, day). It was left out. The To date &#34;y&#34;"},
	} {
		p := b.Get("/credits?" + tc.query)
		if p.Status != 200 || !strings.Contains(p.Body, tc.says) {
			t.Errorf("/credits?%s (%d) does not say %q", tc.query, p.Status, tc.says)
		}
		// A range that ends before it starts offers no CSV: it would be refused.
		if swapped := strings.Contains(tc.says, "is after"); swapped == strings.Contains(p.Body, `id="csv"`) {
			t.Errorf("/credits?%s: a CSV link %v, want %v", tc.query, !swapped, swapped)
		}
		if p := b.Get("/credits/statement.csv?" + tc.query); p.Status != http.StatusBadRequest || !strings.Contains(p.Body, tc.says) {
			t.Errorf("the CSV of %s: %d, want 400 saying %q", tc.query, p.Status, tc.says)
		}
	}
	rows, err := csv.NewReader(strings.NewReader(b.Get("/credits/statement.csv?" + rng).Body)).ReadAll()
	if err != nil || len(rows) != 1+62 || strings.Join(rows[0], ",") != "time_utc,type,amount,balance,run_no,app,reference" {
		t.Fatalf("the CSV of today: %v, %d rows, want the header and every line (not a page)", err, len(rows))
	}
}
