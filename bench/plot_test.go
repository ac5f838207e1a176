package bench

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
)

// The plot is well-formed SVG with a panel per quantity and a line per
// node in it, broken where the node was down, and a line per mark.
func TestPlotIsSVGWithAPanelPerQuantityAndALinePerNode(t *testing.T) {
	t.Parallel()
	var series []*Series
	for _, name := range []string{"RSS", "goroutines"} {
		for _, node := range []string{"node0", "node1"} {
			down := func(t float64) bool { return node == "node1" && t >= 40 && t < 50 }
			s := sampled(100, func(t float64) float64 { return 50 + t/10 }, down)
			s.Name, s.Node, s.Unit = name, node, "n"
			series = append(series, s)
		}
	}
	marks := []Mark{{T: 40, Node: "node1", What: "killed"}, {T: 50, Node: "node1", What: "rejoined"}}
	var out bytes.Buffer
	if err := writePlot(&out, `soak <3 nodes> & kills`, 100, series, marks); err != nil {
		t.Fatal(err)
	}

	type line struct{ panel, node string }
	lines := map[line]int{}
	panels, markLines := 0, 0
	var panel string
	dec := xml.NewDecoder(&out)
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, out.String())
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		attr := func(name string) string {
			for _, a := range el.Attr {
				if a.Name.Local == name {
					return a.Value
				}
			}
			return ""
		}
		switch el.Name.Local {
		case "svg":
			if el.Name.Space != "http://www.w3.org/2000/svg" {
				t.Errorf("root in namespace %q", el.Name.Space)
			}
		case "g":
			panels++
			panel = attr("data-name")
		case "polyline":
			lines[line{panel, attr("data-node")}]++
			if n := len(strings.Fields(attr("points"))); n < 2 {
				t.Errorf("a line of %d points in %s", n, panel)
			}
		case "line":
			if attr("class") == "mark" {
				markLines++
			}
		}
	}
	if panels != 2 {
		t.Errorf("%d panels, want 2 (RSS, goroutines)", panels)
	}
	for _, name := range []string{"RSS", "goroutines"} {
		if n := lines[line{name, "node0"}]; n != 1 {
			t.Errorf("%s: node0 drawn as %d lines, want 1", name, n)
		}
		if n := lines[line{name, "node1"}]; n != 2 {
			t.Errorf("%s: node1, down from 40 s to 50 s, drawn as %d lines, want 2", name, n)
		}
	}
	if markLines != 2*len(marks) {
		t.Errorf("%d mark lines, want %d (each mark through each panel)", markLines, 2*len(marks))
	}
}

func TestNiceCeil(t *testing.T) {
	t.Parallel()
	for v, want := range map[float64]float64{0: 1, 0.3: 0.5, 1: 1, 1.1: 2, 3: 5, 7: 10, 140: 200, 512: 1000} {
		if got := niceCeil(v); got != want {
			t.Errorf("niceCeil(%g) = %g, want %g", v, got, want)
		}
	}
}
