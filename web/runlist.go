package web

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apprun/apprun/engine"
)

// runsPerPage is the length of a page of the run history.
const runsPerPage = 25

// runScanBound bounds the runs one page of a filtered history reads.
const runScanBound = 5000

// runRow is a line of the run history.
type runRow struct {
	engine.Run
	AppName string
}

// Net is what the run cost in the end: its charge less its refund (a
// refunded run cost nothing).
func (r runRow) Net() int64 { return r.CreditCost - r.Refunded }

// runFilter is the history's filter, from the query: an App, a status
// and a range of days (UTC, both ends included).
type runFilter struct {
	App, Status string
	From, To    string // YYYY-MM-DD as sent back to the form
	from, to    time.Time
	Problem     string
	none        bool // the range is empty: nothing can match
}

func readRunFilter(q url.Values, known func(string) bool) runFilter {
	f := runFilter{App: q.Get("app"), Status: q.Get("status"), From: q.Get("from"), To: q.Get("to")}
	switch f.Status {
	case "", "active", "completed", "failed", "canceled":
	default:
		f.Status = ""
	}
	if f.App != "" && !known(f.App) {
		f.App = ""
	}
	f.from, f.to, f.Problem = dayRange(q, "run")
	f.From, f.To = dayText(f.from), dayText(f.to) // a date left out is not sent back
	f.none = !f.from.IsZero() && !f.to.IsZero() && f.to.Before(f.from)
	return f
}

// query is the filter as a query string, with a cursor.
func (f runFilter) query(cursor uint64) string {
	v := url.Values{}
	for k, x := range map[string]string{"app": f.App, "status": f.Status, "from": f.From, "to": f.To} {
		if x != "" {
			v.Set(k, x)
		}
	}
	if cursor != 0 {
		v.Set("cursor", strconv.FormatUint(cursor, 10))
	}
	if len(v) == 0 {
		return "/runs"
	}
	return "/runs?" + v.Encode()
}

// Any says whether anything is filtered.
func (f runFilter) Any() bool { return f.App != "" || f.Status != "" || f.From != "" || f.To != "" }

// match says whether a run is shown; past says the run, and every older
// one, is before the range (so a page stops reading).
func (f runFilter) match(run engine.Run) (ok, past bool) {
	at := run.CreatedAt.UTC()
	if !f.from.IsZero() && at.Before(f.from) {
		return false, true
	}
	if !f.to.IsZero() && !at.Before(f.to.AddDate(0, 0, 1)) {
		return false, false
	}
	if f.App != "" && run.AppSlug != f.App {
		return false, false
	}
	switch f.Status {
	case "active":
		return !run.Terminal(), false
	case "completed":
		return run.Status == engine.StatusCompleted, false
	case "failed":
		return run.Status == engine.StatusFailed && !run.Canceled(), false
	case "canceled":
		return run.Canceled(), false
	}
	return true, false
}

type appChoice struct{ Slug, Name string }

// runsPage is the run history, newest first: each run's App, status, net
// Credits and time; filters by App, status and days; and pages that
// follow the log's order (?cursor= is the sequence the next page starts
// below, so a page never shifts as new runs arrive).
func (s *Site) runsPage(w http.ResponseWriter, r *http.Request, v viewer) {
	q := r.URL.Query()
	cat := s.cfg.Engine.Catalog()
	f := readRunFilter(q, func(slug string) bool { _, ok := cat.Get(slug); return ok })
	cursor, _ := strconv.ParseUint(q.Get("cursor"), 10, 64)
	var rows []runRow
	var next uint64
	if !f.none {
		before, batch := cursor, runsPerPage
		if f.Any() {
			batch = 200 // a filter reads further for a page
		}
	scan:
		for scanned := 0; scanned < runScanBound; {
			runs, more, err := s.cfg.Reads.RunsOf(v.AccountID, before, batch)
			if err != nil {
				s.fail(w, r, err)
				return
			}
			scanned += len(runs)
			for _, run := range runs {
				ok, past := f.match(run)
				if past {
					more = 0
					break scan
				}
				if !ok {
					continue
				}
				if len(rows) == runsPerPage {
					next = rows[len(rows)-1].CreatedSeq // the next page starts below the last one shown
					break scan
				}
				rows = append(rows, runRow{Run: run, AppName: s.appName(run.AppSlug)})
			}
			if more == 0 {
				break
			}
			before = more
			if scanned >= runScanBound && len(rows) < runsPerPage {
				next = more // read on from here on the next page
			}
		}
	}
	var choices []appChoice
	for _, a := range cat.Runnable() {
		choices = append(choices, appChoice{a.Slug, a.Name})
	}
	slices.SortFunc(choices, func(a, b appChoice) int { return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)) })
	nextURL := ""
	if next != 0 {
		nextURL = f.query(next)
	}
	s.render(w, r, http.StatusOK, "runs", "Runs", map[string]any{"Runs": rows, "Filter": f, "Apps": choices, "Next": nextURL,
		"Newest": f.query(0), "First": cursor != 0}, f.Problem)
}
