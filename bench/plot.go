package bench

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// The soak's plot: hand-written SVG, so that the picture in docs/ needs
// no plotting library and diffs as text. One panel per quantity, stacked,
// sharing the time axis; a line per node; each mark (a kill, a rejoin)
// a vertical line through every panel.

const (
	plotWidth  = 960.0
	plotLeft   = 70.0 // room for the y axis' labels
	plotRight  = 20.0
	plotTop    = 56.0 // the title and the legend
	panelH     = 120.0
	panelGap   = 34.0 // a panel's title sits in the gap above it
	plotBottom = 30.0 // the time axis' labels
)

// nodeColors are the nodes' lines, in node order.
var nodeColors = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b"}

// markLabels name the marks of a node in the legend.
var markLabels = map[string]string{"killed": "node ", "rejoined": "node "}

// markStyles draw the marks by what they are.
var markStyles = map[string]string{
	"killed":   `stroke="#d62728" stroke-dasharray="4 3"`,
	"rejoined": `stroke="#2ca02c" stroke-dasharray="1 3"`,
}

// writePlot draws series over [0, span] seconds with marks, under title.
// A gap in a series (no sample for more than three times its usual
// interval: the node was down) breaks its line.
func writePlot(w io.Writer, title string, span float64, series []*Series, marks []Mark) error {
	var names, nodes []string
	for _, s := range series {
		if !slices.Contains(names, s.Name) {
			names = append(names, s.Name)
		}
		if !slices.Contains(nodes, s.Node) {
			nodes = append(nodes, s.Node)
		}
	}
	if span <= 0 {
		span = 1
	}
	height := plotTop + float64(len(names))*(panelH+panelGap) + plotBottom
	inner := plotWidth - plotLeft - plotRight
	x := func(t float64) float64 { return plotLeft + inner*t/span }

	b := bufio.NewWriter(w)
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`+"\n",
		plotWidth, height, plotWidth, height)
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(b, `<text x="%.0f" y="18" font-size="14" font-weight="bold">%s</text>`+"\n", plotLeft, esc(title))
	legend(b, nodes, marks)
	for p, name := range names {
		top := plotTop + panelGap + float64(p)*(panelH+panelGap)
		var unit string
		hi := 0.0
		for _, s := range series {
			if s.Name == name {
				unit = s.Unit
				for _, v := range s.V {
					hi = max(hi, v)
				}
			}
		}
		hi = niceCeil(hi)
		y := func(v float64) float64 { return top + panelH - panelH*v/hi }
		label := name
		if unit != "" {
			label += " (" + unit + ")"
		}
		fmt.Fprintf(b, `<g class="panel" data-name="%s">`+"\n", esc(name))
		fmt.Fprintf(b, `<text x="%.0f" y="%.1f" font-weight="bold">%s</text>`+"\n", plotLeft, top-8, esc(label))
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#999"/>`+"\n", plotLeft, top, inner, panelH)
		for _, v := range []float64{0, hi / 2, hi} {
			fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", plotLeft, y(v), plotLeft+inner, y(v))
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", plotLeft-6, y(v)+4, axisLabel(v))
		}
		for _, m := range marks {
			fmt.Fprintf(b, `<line class="mark" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" %s><title>%s %s</title></line>`+"\n",
				x(m.T), top, x(m.T), top+panelH, markStyle(m.What), esc(m.Node), esc(m.What))
		}
		for _, s := range series {
			if s.Name != name {
				continue
			}
			color := nodeColors[slices.Index(nodes, s.Node)%len(nodeColors)]
			for _, seg := range segments(s) {
				pts := make([]string, len(seg))
				for k, i := range seg {
					pts[k] = fmt.Sprintf("%.1f,%.1f", x(s.T[i]), y(s.V[i]))
				}
				fmt.Fprintf(b, `<polyline data-node="%s" fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n",
					esc(s.Node), color, strings.Join(pts, " "))
			}
		}
		fmt.Fprintln(b, "</g>")
	}
	axisY := plotTop + float64(len(names))*(panelH+panelGap)
	step := niceStep(span / 6)
	for t := 0.0; t <= span+1e-9; t += step {
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x(t), axisY+14, clock(t))
	}
	fmt.Fprintln(b, "</svg>")
	return b.Flush()
}

// legend names the nodes' colours and the marks' kinds.
func legend(b *bufio.Writer, nodes []string, marks []Mark) {
	lx := plotLeft
	for i, n := range nodes {
		fmt.Fprintf(b, `<line x1="%.0f" y1="36" x2="%.0f" y2="36" stroke="%s" stroke-width="3"/>`, lx, lx+18, nodeColors[i%len(nodeColors)])
		fmt.Fprintf(b, `<text x="%.0f" y="40">%s</text>`+"\n", lx+22, esc(n))
		lx += 90
	}
	var kinds []string
	for _, m := range marks {
		if !slices.Contains(kinds, m.What) {
			kinds = append(kinds, m.What)
		}
	}
	for _, k := range kinds {
		fmt.Fprintf(b, `<line x1="%.0f" y1="30" x2="%.0f" y2="42" %s/>`, lx+9, lx+9, markStyle(k))
		fmt.Fprintf(b, `<text x="%.0f" y="40">%s</text>`+"\n", lx+16, esc(markLabels[k]+k))
		lx += 130
	}
}

func markStyle(what string) string {
	if s, ok := markStyles[what]; ok {
		return s
	}
	return `stroke="#000" stroke-dasharray="6 2"`
}

// segments splits s's samples where a gap is over three times the usual
// interval: a node's line stops while it is down.
func segments(s *Series) [][]int {
	var gaps []float64
	for i := 1; i < len(s.T); i++ {
		gaps = append(gaps, s.T[i]-s.T[i-1])
	}
	usual := median(gaps)
	var segs [][]int
	var cur []int
	for i := range s.T {
		if i > 0 && s.T[i]-s.T[i-1] > 3*usual {
			segs, cur = append(segs, cur), nil
		}
		cur = append(cur, i)
	}
	if len(cur) > 0 {
		segs = append(segs, cur)
	}
	return segs
}

// niceCeil is the smallest 1, 2 or 5 times a power of ten at or above v
// (1 for nothing above 0): the top of a panel's axis.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// niceStep is a time step, in seconds, near d: a round number of seconds
// or minutes.
func niceStep(d float64) float64 {
	for _, s := range []float64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600} {
		if s >= d {
			return s
		}
	}
	return 3600
}

// clock labels a time axis' tick: seconds under two minutes, else minutes.
func clock(t float64) string {
	if t < 120 && math.Mod(t, 60) != 0 {
		return fmt.Sprintf("%.0fs", t)
	}
	return fmt.Sprintf("%.0fm", t/60)
}

func axisLabel(v float64) string {
	switch {
	case v == math.Trunc(v) || v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
