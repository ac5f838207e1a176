package web

import (
	"fmt"
	"strconv"
)

// chart is a bar chart drawn on the server as SVG (templates/_usage.html
// draws any chart): what it shows in words (its title and description,
// which name it to a screen reader), and its shapes, already placed in
// its viewBox. Colours are the stylesheet's, by class.
type chart struct {
	ID          string
	Title, Desc string
	W, H        int
	Bars        []chartBar
	Rules       []chartRule
	Texts       []chartText
}

// chartBar is a bar, its value in words in its title.
type chartBar struct {
	X, Y, W, H px
	Title      string
}

// chartRule is a line: the axis, or a grid line at a tick.
type chartRule struct {
	X1, Y1, X2, Y2 px
	Class          string
}

// chartText is a label: a tick's value, a day, an App and its figure.
type chartText struct {
	X, Y   px
	Anchor string
	Class  string
	Text   string
}

// px is a length in a chart's viewBox, written with one decimal.
type px float64

func (p px) String() string { return strconv.FormatFloat(float64(p), 'f', 1, 64) }

// axisScale is the top of a value axis at or above most, and the step of
// its ticks: 1, 2 or 5 times a power of ten, at most ticks steps.
func axisScale(most int64, ticks int) (top, step int64) {
	if most <= 0 {
		return 1, 1
	}
	for pow := int64(1); ; pow *= 10 {
		for _, m := range []int64{1, 2, 5} {
			step = m * pow
			if n := (most + step - 1) / step; n <= int64(ticks) {
				return n * step, step
			}
		}
	}
}

// dayChart draws a usage's days as columns, oldest at the left: an axis
// of Credits with round ticks, the first, middle and last days under it.
// The small one, for the home card, marks only the top of its axis.
func dayChart(u usage, id string, small bool) chart {
	c := chart{ID: id, W: 480, H: 190, Title: "Credits spent per day, " + span(u)}
	left, top, bottom := 56.0, 8.0, 160.0 // room for "10,000" at the phone's larger type
	if small {
		c.W, c.H, left, bottom = 260, 100, 36, 74
	}
	right := float64(c.W) - 4
	var most int64
	busiest := -1
	for i, d := range u.Days {
		if d.Spent > most {
			most, busiest = d.Spent, i
		}
	}
	c.Desc = fmt.Sprintf("%s spent in the %d days from %s to %s (UTC).", creditsOf(u.Total), len(u.Days), u.First.Format("2 January"), u.Last.Format("2 January 2006"))
	if busiest >= 0 {
		d := u.Days[busiest]
		c.Desc += fmt.Sprintf(" The most on %s: %s.", d.Day.Format("Monday 2 January"), creditsOf(d.Spent))
	}
	axisTop, step := axisScale(most, 4)
	y := func(v int64) float64 { return bottom - float64(v)/float64(axisTop)*(bottom-top) }
	for v := step; v <= axisTop; v += step {
		if small && v != axisTop {
			continue
		}
		c.Rules = append(c.Rules, chartRule{X1: px(left), Y1: px(y(v)), X2: px(right), Y2: px(y(v)), Class: "grid"})
		c.Texts = append(c.Texts, chartText{X: px(left - 6), Y: px(y(v) + 4), Anchor: "end", Class: "tick", Text: groupThousands(v)})
	}
	c.Texts = append(c.Texts, chartText{X: px(left - 6), Y: px(bottom + 4), Anchor: "end", Class: "tick", Text: "0"})
	slot := (right - left) / float64(max(len(u.Days), 1))
	for i, d := range u.Days {
		if d.Spent <= 0 {
			continue
		}
		h := bottom - y(d.Spent)
		c.Bars = append(c.Bars, chartBar{X: px(left + float64(i)*slot + slot*0.15), Y: px(bottom - h), W: px(slot * 0.7), H: px(h),
			Title: d.Day.Format("Mon 2 Jan") + ": " + creditsOf(d.Spent)})
	}
	c.Rules = append(c.Rules, chartRule{X1: px(left), Y1: px(bottom), X2: px(right), Y2: px(bottom), Class: "axis"})
	if n := len(u.Days); n > 0 {
		label := func(i int, anchor string) {
			c.Texts = append(c.Texts, chartText{X: px(left + (float64(i)+0.5)*slot), Y: px(bottom + 18), Anchor: anchor, Class: "day", Text: u.Days[i].Day.Format("2 Jan")})
		}
		label(0, "start")
		if !small {
			label(n/2, "middle")
		}
		label(n-1, "end")
	}
	return c
}

// appChartRows is how many Apps the per-App chart draws; the rest are one
// bar (the table lists every App).
const appChartRows = 8

// appChart draws a usage's Apps as bars, the most first: each App's name
// above its bar and its Credits at the bar's end.
func appChart(u usage, id string) chart {
	apps := u.Apps
	if len(apps) > appChartRows {
		rest := appUsage{Name: plural(len(apps)-appChartRows+1, "other App", "other Apps")}
		for _, a := range apps[appChartRows-1:] {
			rest.Spent += a.Spent
		}
		apps = append(apps[:appChartRows-1:appChartRows-1], rest)
	}
	const row, left, width = 40.0, 2.0, 400.0
	c := chart{ID: id, W: int(width), H: int(row*float64(len(apps)) + 8), Title: "Credits spent per App, " + span(u),
		Desc: fmt.Sprintf("%s spent on %s from %s to %s (UTC).", creditsOf(u.Total), plural(len(u.Apps), "App", "Apps"), u.First.Format("2 January"), u.Last.Format("2 January 2006"))}
	if len(apps) > 0 {
		c.Desc += fmt.Sprintf(" The most on %s: %s.", apps[0].Name, creditsOf(apps[0].Spent))
	}
	var most int64
	for _, a := range apps {
		most = max(most, a.Spent)
	}
	barMax := width - left - 90 // room for the figure after the longest bar
	for i, a := range apps {
		top := float64(i) * row
		w := 0.0
		if most > 0 && a.Spent > 0 {
			w = float64(a.Spent) / float64(most) * barMax
		}
		c.Texts = append(c.Texts, chartText{X: px(left), Y: px(top + 14), Anchor: "start", Class: "name", Text: a.Name})
		c.Bars = append(c.Bars, chartBar{X: px(left), Y: px(top + 20), W: px(w), H: 14, Title: a.Name + ": " + creditsOf(a.Spent)})
		c.Texts = append(c.Texts, chartText{X: px(left + w + 6), Y: px(top + 32), Anchor: "start", Class: "value", Text: groupThousands(a.Spent)})
	}
	c.Rules = append(c.Rules, chartRule{X1: px(left), Y1: 16, X2: px(left), Y2: px(float64(len(apps))*row + 4), Class: "axis"})
	return c
}

// span names a usage's window: "3 Nov to 2 Dec 2026".
func span(u usage) string {
	return u.First.Format("2 Jan") + " to " + u.Last.Format("2 Jan 2006")
}
