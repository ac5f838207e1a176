package web

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/ledger"
)

// An axis ends at a round number at or above the most, in at most four
// round steps.
func TestAxisScaleIsRound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ most, top, step int64 }{
		{0, 1, 1}, {1, 1, 1}, {3, 3, 1}, {4, 4, 1}, {5, 6, 2}, {25, 30, 10}, {40, 40, 10}, {41, 60, 20},
		{999, 1000, 500}, {1001, 1500, 500}, {12_345, 15_000, 5000},
	} {
		top, step := axisScale(tc.most, 4)
		if top != tc.top || step != tc.step {
			t.Errorf("axisScale(%d) = %d by %d, want %d by %d", tc.most, top, step, tc.top, tc.step)
		}
	}
}

// The per-day chart: a bar a day that spent, as tall as its share of the
// axis, titled with its day and Credits; ticks at round values; the
// first, middle and last days under the axis; a description in words.
func TestTheDayChartDrawsEachDaysCredits(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 30, 12, 0, 0, 0, time.UTC)
	u := spending([]ledger.Line{
		{Type: "charge", RunNo: "a", AppSlug: "x", Amount: -25, At: time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)},
		{Type: "charge", RunNo: "b", AppSlug: "x", Amount: -10, At: time.Date(2026, 3, 30, 8, 0, 0, 0, time.UTC)},
	}, now, 30)
	c := dayChart(u, "d", false)
	if len(c.Bars) != 2 {
		t.Fatalf("%d bars, want one for each of the 2 days that spent", len(c.Bars))
	}
	tall, short := c.Bars[0], c.Bars[1]
	if tall.Title != "Mon 2 Mar: 25 Credits" || short.Title != "Mon 30 Mar: 10 Credits" {
		t.Errorf("bar titles %q, %q", tall.Title, short.Title)
	}
	// The axis tops at 30: 25 is 25/30 of the plot, 10 a third.
	if plot := float64(tall.H) * 30 / 25; fmt.Sprintf("%.0f", float64(short.H)*3) != fmt.Sprintf("%.0f", plot) {
		t.Errorf("bar heights %v and %v are not 25:10 on an axis of 30", tall.H, short.H)
	}
	if tall.Y+tall.H != short.Y+short.H || tall.X >= short.X {
		t.Errorf("bars do not stand on one axis, oldest left: %+v %+v", tall, short)
	}
	var texts []string
	for _, x := range c.Texts {
		texts = append(texts, x.Text)
	}
	if got := strings.Join(texts, ","); got != "10,20,30,0,1 Mar,16 Mar,30 Mar" {
		t.Errorf("labels %s", got)
	}
	if !strings.Contains(c.Desc, "35 Credits spent in the 30 days from 1 March to 30 March 2026 (UTC). The most on Monday 2 March: 25 Credits.") {
		t.Errorf("description %q", c.Desc)
	}
	if small := dayChart(u, "s", true); len(small.Bars) != 2 || len(small.Texts) != 4 { // the top, 0, the first and last days
		t.Errorf("the small chart: %d bars, %d labels", len(small.Bars), len(small.Texts))
	}
}

// The per-App chart: a bar an App, the most first and the longest, its
// name and figure beside it; past eight Apps the rest are one bar.
func TestTheAppChartDrawsTheMostFirstAndFoldsTheRest(t *testing.T) {
	t.Parallel()
	u := usage{Total: 66}
	for i := range 11 {
		u.Apps = append(u.Apps, appUsage{Slug: fmt.Sprint(i), Name: fmt.Sprintf("App %d", i), Spent: int64(11 - i)})
	}
	c := appChart(u, "a")
	if len(c.Bars) != appChartRows {
		t.Fatalf("%d bars, want %d", len(c.Bars), appChartRows)
	}
	if c.Bars[0].Title != "App 0: 11 Credits" || c.Bars[0].W <= c.Bars[1].W {
		t.Errorf("first bar %+v, second %+v", c.Bars[0], c.Bars[1])
	}
	if last := c.Bars[appChartRows-1]; last.Title != "4 other Apps: 10 Credits" { // 4+3+2+1
		t.Errorf("the folded bar: %q", last.Title)
	}
	if len(u.Apps) != 11 || u.Apps[7].Name != "App 7" {
		t.Error("folding the chart's rows changed the usage's Apps (the table lists them all)")
	}
	if !strings.Contains(c.Desc, "66 Credits spent on 11 Apps") || !strings.Contains(c.Desc, "The most on App 0: 11 Credits.") {
		t.Errorf("description %q", c.Desc)
	}
}
