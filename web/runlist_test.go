package web_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"
)

// historyRow is one line of the run history as the page shows it.
type historyRow struct{ RunNo, App, Status, Credits string }

var historyRowRE = regexp.MustCompile(`(?s)<tr>\s*<td data-label="App"><a href="/runs/(run_[^"]+)">([^<]+)</a>.*?<span class="status [^"]*">([^<]+)</span>.*?<td data-label="Credits" class="num">(.*?)</td>`)

func history(t *testing.T, b *Browser, path string) ([]historyRow, string) {
	t.Helper()
	p := b.Get(path)
	if p.Status != 200 {
		t.Fatalf("%s: %d", path, p.Status)
	}
	var out []historyRow
	for _, m := range historyRowRE.FindAllStringSubmatch(p.Body, -1) {
		out = append(out, historyRow{m[1], m[2], m[3], strings.TrimSpace(regexp.MustCompile(`<[^>]+>`).ReplaceAllString(m[4], ""))})
	}
	return out, p.Body
}

func TestRunHistoryShowsNetCreditsAndFiltersByAppStatusAndDay(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits), WithSignupCredits(10_000))
	b := h.Browser(t)
	b.SignUp("history@example.com")
	var cold []string
	for range 3 {
		cold = append(cold, b.StartColdEmail())
	}
	failed := []string{b.StartApp(TestAppSlug, url.Values{"mode": {"fail"}}), b.StartApp(TestAppSlug, url.Values{"mode": {"fail"}})}
	held := b.StartApp(TestAppSlug, url.Values{"mode": {"hold"}})
	for _, r := range append(append([]string{}, cold...), failed...) {
		h.WaitRunDone(r)
	}
	if p := b.Post("/runs/"+held+"/cancel", url.Values{"confirm": {"yes"}}); p.Status != 303 {
		t.Fatalf("cancel: %d %s", p.Status, p.Body)
	}
	h.WaitRunDone(held)

	rows, _ := history(t, b, "/runs")
	if len(rows) != 6 {
		t.Fatalf("%d rows, want 6: %v", len(rows), rows)
	}
	by := map[string]historyRow{}
	for _, r := range rows {
		by[r.RunNo] = r
	}
	if r := by[cold[0]]; r.App != "Cold Email Writer" || r.Status != "completed" || r.Credits != "25" {
		t.Errorf("a completed run: %+v", r)
	}
	// A refunded run cost nothing: 0, with "refunded" beside it.
	if r := by[failed[0]]; r.App != "Test App" || r.Status != "failed" || r.Credits != "0 refunded" {
		t.Errorf("a failed run: %+v, want 0 refunded", r)
	}
	if r := by[held]; r.Status != "canceled" || r.Credits != "0 refunded" {
		t.Errorf("a canceled run: %+v", r)
	}

	today := time.Now().UTC().Format(time.DateOnly)
	for _, tc := range []struct {
		query string
		want  []string
		says  string
	}{
		{"app=" + TestAppSlug, append(append([]string{}, failed...), held), ""},
		{"status=failed", failed, ""},
		{"status=canceled", []string{held}, ""},
		{"status=completed&app=cold-email-writer", cold, ""},
		{"app=" + TestAppSlug + "&status=completed", nil, "No runs match this filter."},
		{"from=" + today + "&to=" + today, append(append(append([]string{}, cold...), failed...), held), ""},
		{"from=" + time.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly), nil, "No runs match this filter."},
		{"to=" + time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly), nil, "No runs match this filter."},
		{"from=2026-13-45", append(append(append([]string{}, cold...), failed...), held), "The From date &#34;2026-13-45&#34; is not a date"},
		// A bad date is left out alone: the other still filters, and each
		// bad one is named, in the statement's words.
		{"from=" + time.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly) + "&to=garbage", nil, "The To date &#34;garbage&#34; is not a date"},
		{"from=x&to=y", append(append(append([]string{}, cold...), failed...), held), "The From date &#34;x&#34; is not a date: write it like 2026-11-23 (year, month, day). It was left out. The To date &#34;y&#34;"},
		{"from=" + today + "&to=2001-01-01", nil, "The From date (" + today + ") is after the To date (2001-01-01), so no run can fall between them"},
		{"app=no-such-app", append(append(append([]string{}, cold...), failed...), held), ""},
	} {
		rows, body := history(t, b, "/runs?"+tc.query)
		got := map[string]bool{}
		for _, r := range rows {
			got[r.RunNo] = true
		}
		if len(rows) != len(tc.want) || (tc.says != "" && !strings.Contains(body, tc.says)) {
			t.Errorf("?%s: %d rows %v, want %d %v saying %q", tc.query, len(rows), rows, len(tc.want), tc.want, tc.says)
			continue
		}
		for _, w := range tc.want {
			if !got[w] {
				t.Errorf("?%s lacks %s", tc.query, w)
			}
		}
	}
}

// A page of the history does not shift when runs arrive: the next page
// starts below the last run shown, and a filter keeps to its pages.
func TestRunHistoryPagesAreStableAsRunsArrive(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits), WithSignupCredits(10_000))
	b := h.Browser(t)
	b.SignUp("pages@example.com")
	var all []string
	for range 26 {
		all = append(all, b.StartApp(TestAppSlug, url.Values{"mode": {"ok"}}))
	}
	all = append(all, b.StartColdEmail(), b.StartColdEmail())
	for _, r := range all {
		h.WaitRunDone(r)
	}
	first, body := history(t, b, "/runs?app="+TestAppSlug)
	next := regexp.MustCompile(`href="(/runs\?[^"]+)" rel="next"`).FindStringSubmatch(body)
	if len(first) != 25 || next == nil || !strings.Contains(next[1], "app="+TestAppSlug) {
		t.Fatalf("page 1: %d rows, next %v", len(first), next)
	}
	// Two more runs arrive before the second page is read.
	h.WaitRunDone(b.StartApp(TestAppSlug, url.Values{"mode": {"ok"}}))
	h.WaitRunDone(b.StartApp(TestAppSlug, url.Values{"mode": {"ok"}}))
	second, _ := history(t, b, strings.ReplaceAll(next[1], "&amp;", "&"))
	if len(second) != 1 || second[0].RunNo != all[0] {
		t.Fatalf("page 2: %v, want only the oldest run %s", second, all[0])
	}
	for _, r := range first {
		if r.RunNo == second[0].RunNo || r.App != "Test App" {
			t.Fatalf("page 1 holds %+v", r)
		}
	}
}
