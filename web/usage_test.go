package web

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apprun/apprun/ledger"
)

// spending adds up the statement: charges less the refunds of those
// charges, on the charge's day (UTC), per App, over the 30 days that end
// today; nothing else counts.
func TestSpendingCountsChargesLessTheirRefundsByTheChargesDay(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 30, 15, 4, 5, 0, time.UTC) // the window: 1 to 30 March
	at := func(day, hour int) time.Time { return time.Date(2026, 3, day, hour, 0, 0, 0, time.UTC) }
	charge := func(run, app string, amount int64, at time.Time) ledger.Line {
		return ledger.Line{Type: "charge", RunNo: run, AppSlug: app, Amount: -amount, At: at}
	}
	refund := func(run, app string, amount int64, at time.Time) ledger.Line {
		return ledger.Line{Type: "refund", RunNo: run, AppSlug: app, Amount: amount, At: at}
	}
	type day struct {
		date  int // of March
		spent int64
		runs  int64
	}
	for _, tc := range []struct {
		name  string
		lines []ledger.Line
		days  []day // every other day spent nothing
		apps  []appUsage
		total int64
		runs  int64
	}{
		{name: "nothing", lines: nil},
		{name: "a charge counts on its day, for its App",
			lines: []ledger.Line{charge("r1", "email", 25, at(10, 9))},
			days:  []day{{10, 25, 1}}, apps: []appUsage{{Slug: "email", Spent: 25, Runs: 1}}, total: 25, runs: 1},
		{name: "a refund the same day: the run spends nothing",
			lines: []ledger.Line{refund("r1", "email", 25, at(10, 9).Add(time.Minute)), charge("r1", "email", 25, at(10, 9))},
			total: 0},
		{name: "a refund the next day comes off the charge's day",
			lines: []ledger.Line{refund("r1", "email", 25, at(11, 1)), charge("r2", "email", 25, at(10, 23)), charge("r1", "email", 25, at(10, 22))},
			days:  []day{{10, 25, 1}}, apps: []appUsage{{Slug: "email", Spent: 25, Runs: 1}}, total: 25, runs: 1},
		{name: "grants, purchases, adjustments and disputes are not spending",
			lines: []ledger.Line{{Type: "opening_grant", Amount: 100, At: at(1, 0)}, {Type: "grant", Amount: 50, At: at(2, 0)},
				{Type: "purchase", Amount: 500, At: at(3, 0)}, {Type: "adjustment", Amount: -20, At: at(4, 0)},
				{Type: "revocation", Amount: -500, At: at(5, 0)}, {Type: "dispute", Amount: -30, At: at(6, 0)},
				charge("r1", "post", 10, at(7, 0))},
			days: []day{{7, 10, 1}}, apps: []appUsage{{Slug: "post", Spent: 10, Runs: 1}}, total: 10, runs: 1},
		{name: "the window starts at midnight UTC 29 days before today",
			lines: []ledger.Line{charge("in", "email", 7, at(1, 0)), charge("out", "email", 100, at(1, 0).Add(-time.Nanosecond))},
			days:  []day{{1, 7, 1}}, apps: []appUsage{{Slug: "email", Spent: 7, Runs: 1}}, total: 7, runs: 1},
		{name: "a refund in the window of a charge before it counts for nothing",
			lines: []ledger.Line{refund("old", "email", 25, at(2, 0)), charge("old", "email", 25, at(1, 0).Add(-time.Hour))},
			total: 0},
		{name: "today counts; a line stamped after today does not",
			lines: []ledger.Line{charge("late", "email", 9, at(31, 0)), charge("now", "email", 3, now)},
			days:  []day{{30, 3, 1}}, apps: []appUsage{{Slug: "email", Spent: 3, Runs: 1}}, total: 3, runs: 1},
		{name: "Apps the most first, then by slug; an App that spent nothing left out",
			lines: []ledger.Line{charge("a", "post", 10, at(5, 0)), charge("b", "email", 10, at(5, 1)), charge("c", "audit", 30, at(6, 0)),
				charge("d", "refunded", 40, at(6, 1)), refund("d", "refunded", 40, at(6, 2))},
			days:  []day{{5, 20, 2}, {6, 30, 1}},
			apps:  []appUsage{{Slug: "audit", Spent: 30, Runs: 1}, {Slug: "email", Spent: 10, Runs: 1}, {Slug: "post", Spent: 10, Runs: 1}},
			total: 50, runs: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := spending(tc.lines, now, 30)
			if len(u.Days) != 30 || !u.First.Equal(at(1, 0)) || !u.Last.Equal(at(30, 0)) {
				t.Fatalf("window: %d days, %s to %s; want 30, 1 to 30 March", len(u.Days), u.First, u.Last)
			}
			want := make([]dayUsage, 30)
			for i := range want {
				want[i].Day = at(1+i, 0)
			}
			for _, d := range tc.days {
				want[d.date-1].Spent, want[d.date-1].Runs = d.spent, d.runs
			}
			if !slices.EqualFunc(u.Days, want, func(a, b dayUsage) bool { return a.Day.Equal(b.Day) && a.Spent == b.Spent && a.Runs == b.Runs }) {
				t.Errorf("days:\n got %v\nwant %v", u.Days, want)
			}
			if !slices.Equal(u.Apps, tc.apps) {
				t.Errorf("apps: %v, want %v", u.Apps, tc.apps)
			}
			if u.Total != tc.total || u.Runs != tc.runs {
				t.Errorf("total %d on %d runs, want %d on %d", u.Total, u.Runs, tc.total, tc.runs)
			}
		})
	}
}

// statementOf serves a statement from lines kept newest first, paged as
// the projections page it (by log sequence), and counts the lines it
// served.
type statementOf struct {
	Reads
	lines  []ledger.Line
	served int
}

func (f *statementOf) Statement(_ string, before uint64, limit int) ([]ledger.Line, uint64, error) {
	var out []ledger.Line
	for _, l := range f.lines {
		if before != 0 && l.Seq >= before {
			continue
		}
		if len(out) == limit {
			f.served += len(out)
			return out, out[len(out)-1].Seq, nil
		}
		out = append(out, l)
	}
	f.served += len(out)
	return out, 0, nil
}

// The usage read stops at the window's first day: an account's older
// history is not read, however long it is.
func TestUsageReadsTheStatementOnlyBackToTheWindow(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 30, 12, 0, 0, 0, time.UTC)
	f := &statementOf{}
	for i := 0; i < 20_000; i++ { // a line an hour, newest first: the window holds today's 13 and 29 days of 24
		f.lines = append(f.lines, ledger.Line{Type: "charge", RunNo: fmt.Sprint(i), Amount: -1, At: now.Add(-time.Duration(i) * time.Hour), Seq: uint64(20_000 - i)})
	}
	s := &Site{cfg: Config{Reads: f, Now: func() time.Time { return now }}}
	lines, err := s.linesSince("acct", now.Truncate(day).AddDate(0, 0, 1-usageDays))
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 12+1+29*24 {
		t.Errorf("%d lines in the window, want %d", len(lines), 12+1+29*24)
	}
	if f.served > len(lines)+1000 {
		t.Errorf("the read served %d lines of 20,000 for a window of %d: it did not stop at the window", f.served, len(lines))
	}
}
