package web

import (
	"cmp"
	"net/http"
	"slices"
	"time"

	"github.com/apprun/apprun/ledger"
)

// usageDays is how many days the usage page and the home card look back,
// today (UTC) included.
const usageDays = 30

const day = 24 * time.Hour

// usage is what an account spent over a window of days: per day, per App
// and in all. Spent is charges less the refunds of those charges, so a
// refunded run spends nothing.
type usage struct {
	// First and Last are the window's first and last days (UTC midnight).
	First, Last time.Time
	// Days are every day of the window, oldest first, a day with nothing
	// spent included.
	Days []dayUsage
	// Apps are the Apps that spent anything, the most first.
	Apps  []appUsage
	Total int64
	// Runs counts the runs charged in the window and not refunded.
	Runs int64
}

// RunsInWords is Runs with its noun: "1 run", "3 runs".
func (u usage) RunsInWords() string { return plural(int(u.Runs), "run", "runs") }

type dayUsage struct {
	Day   time.Time
	Spent int64
	Runs  int64
}

type appUsage struct {
	Slug, Name string
	Spent      int64
	Runs       int64
}

// spending adds up an account's statement lines (any order) over the
// days days that end with today's (UTC). A charge counts on its day, for
// its App; a refund takes its amount off its run's charge, on the
// charge's day, whenever it came; a refund of a charge before the window
// counts for nothing, and so do grants, purchases and every other line.
func spending(lines []ledger.Line, today time.Time, days int) usage {
	first := today.UTC().Truncate(day).AddDate(0, 0, 1-days)
	u := usage{First: first, Last: first.AddDate(0, 0, days-1), Days: make([]dayUsage, days)}
	for i := range u.Days {
		u.Days[i].Day = first.AddDate(0, 0, i)
	}
	type run struct {
		day                int
		app                string
		charged, refunded  int64
		hasCharge, counted bool
	}
	runs := map[string]*run{}
	of := func(runNo string) *run {
		r := runs[runNo]
		if r == nil {
			r = &run{}
			runs[runNo] = r
		}
		return r
	}
	for _, l := range lines {
		switch {
		case l.Type == "charge" && l.RunNo != "":
			d := int(l.At.Sub(first) / day)
			if l.At.Before(first) || d >= days { // before the window, or after today
				continue
			}
			r := of(l.RunNo)
			r.day, r.app, r.charged, r.hasCharge = d, l.AppSlug, r.charged-l.Amount, true
		case l.Type == "refund" && l.RunNo != "":
			r := of(l.RunNo)
			r.refunded += l.Amount
		}
	}
	apps := map[string]*appUsage{}
	for _, r := range runs {
		if !r.hasCharge {
			continue
		}
		spent := r.charged - r.refunded
		a := apps[r.app]
		if a == nil {
			a = &appUsage{Slug: r.app}
			apps[r.app] = a
		}
		a.Spent += spent
		u.Days[r.day].Spent += spent
		u.Total += spent
		if spent > 0 {
			a.Runs++
			u.Days[r.day].Runs++
			u.Runs++
		}
	}
	for _, a := range apps {
		if a.Spent != 0 {
			u.Apps = append(u.Apps, *a)
		}
	}
	slices.SortFunc(u.Apps, func(a, b appUsage) int {
		return cmp.Or(cmp.Compare(b.Spent, a.Spent), cmp.Compare(a.Slug, b.Slug))
	})
	return u
}

// linesSince reads the account's statement lines from since on. The
// statement is read newest first, so the read stops at the first older
// line: the cost is the window's lines, not the account's history.
func (s *Site) linesSince(accountID string, since time.Time) ([]ledger.Line, error) {
	var out []ledger.Line
	var before uint64
	for limit := 100; ; limit = 1000 { // most accounts fit the first page
		lines, next, err := s.cfg.Reads.Statement(accountID, before, limit)
		if err != nil {
			return nil, err
		}
		for _, l := range lines {
			if l.At.Before(since) {
				return out, nil
			}
			out = append(out, l)
		}
		if next == 0 {
			return out, nil
		}
		before = next
	}
}

// usageOf is the account's usage over the last usageDays days, its Apps
// named. A charge written before the ledger kept its App is named from
// its run, one read a run.
func (s *Site) usageOf(accountID string) (usage, error) {
	today := s.cfg.Now().UTC()
	lines, err := s.linesSince(accountID, today.Truncate(day).AddDate(0, 0, 1-usageDays))
	if err != nil {
		return usage{}, err
	}
	for i, l := range lines {
		if l.Type == "charge" && l.AppSlug == "" && l.RunNo != "" {
			if run, err := s.cfg.Reads.Run(l.RunNo); err == nil {
				lines[i].AppSlug = run.AppSlug
			}
		}
	}
	u := spending(lines, today, usageDays)
	for i, a := range u.Apps {
		u.Apps[i].Name = s.appName(a.Slug)
		if a.Slug == "" {
			u.Apps[i].Name = "An App no longer recorded"
		}
	}
	return u, nil
}

// usageView is the usage page's data: the numbers and their charts.
type usageView struct {
	usage
	DayChart, AppChart, Card chart
}

func viewOf(u usage) usageView {
	return usageView{usage: u, DayChart: dayChart(u, "day-chart", false), AppChart: appChart(u, "app-chart"),
		Card: dayChart(u, "card-chart", true)}
}

// usagePage is GET /usage: Credits spent per day over the last 30 days
// and per App, as charts and as tables.
func (s *Site) usagePage(w http.ResponseWriter, r *http.Request, v viewer) {
	u, err := s.usageOf(v.AccountID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "usage", "Usage", viewOf(u))
}
