package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"text/tabwriter"
	"time"
)

// Figure is one measured number, with its target when it has one.
type Figure struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Target string  `json:"target,omitempty"`
	// Met is nil for a figure without a target.
	Met *bool `json:"met,omitempty"`
}

// Scenario is what one scenario measured.
type Scenario struct {
	Name    string   `json:"name"`
	Command string   `json:"command"`
	Figures []Figure `json:"figures"`
	Notes   []string `json:"notes,omitempty"`
	Err     string   `json:"error,omitempty"`
	// Series and Marks are what a scenario sampled over time (the soak's
	// nodes), and the moments of note on that time axis (kills).
	Series []*Series `json:"series,omitempty"`
	Marks  []Mark    `json:"marks,omitempty"`
}

// Series is one quantity sampled over time on one node. A node that is
// down has no sample: T has a gap.
type Series struct {
	Name string `json:"name"`
	Unit string `json:"unit"`
	Node string `json:"node"`
	// T is each sample's time in seconds from the scenario's start, V
	// its value.
	T []float64 `json:"t"`
	V []float64 `json:"v"`
}

func (s *Series) add(t, v float64) {
	s.T, s.V = append(s.T, t), append(s.V, v)
}

// Mark is a moment on the series' time axis: a node killed, restarted.
type Mark struct {
	T    float64 `json:"t"`
	Node string  `json:"node,omitempty"`
	What string  `json:"what"`
}

func (s *Scenario) add(name string, value float64, unit string) {
	s.Figures = append(s.Figures, Figure{Name: name, Value: value, Unit: unit})
}

// atLeast and atMost add a figure with a target.
func (s *Scenario) atLeast(name string, value float64, unit string, target float64) {
	met := value >= target
	s.Figures = append(s.Figures, Figure{Name: name, Value: value, Unit: unit, Target: fmt.Sprintf(">= %g", target), Met: &met})
}

func (s *Scenario) atMost(name string, value float64, unit string, target float64) {
	met := value <= target
	s.Figures = append(s.Figures, Figure{Name: name, Value: value, Unit: unit, Target: fmt.Sprintf("<= %g", target), Met: &met})
}

// unmet adds a figure that could not be measured, which fails its target.
func (s *Scenario) unmet(name, target string) {
	met := false
	s.Figures = append(s.Figures, Figure{Name: name, Target: target, Met: &met})
}

// below adds a figure that must stay under its target.
func (s *Scenario) below(name string, value float64, unit string, target float64) {
	met := value < target
	s.Figures = append(s.Figures, Figure{Name: name, Value: value, Unit: unit, Target: fmt.Sprintf("< %g", target), Met: &met})
}

func (s *Scenario) note(format string, args ...any) {
	s.Notes = append(s.Notes, fmt.Sprintf(format, args...))
}

func (s *Scenario) latency(prefix string, sum summary) {
	s.add(prefix+" p50", ms(sum.P50), "ms")
	s.add(prefix+" p90", ms(sum.P90), "ms")
	s.add(prefix+" p99", ms(sum.P99), "ms")
	s.add(prefix+" max", ms(sum.Max), "ms")
}

// Report is one bench invocation's results.
type Report struct {
	Date      string      `json:"date"`
	Machine   string      `json:"machine"`
	GoVersion string      `json:"go_version"`
	Command   string      `json:"command"`
	Scenarios []*Scenario `json:"scenarios"`
}

// NewReport starts a report for this machine.
func NewReport(command string) *Report {
	return &Report{Date: time.Now().UTC().Format(time.RFC3339), Command: command, GoVersion: runtime.Version(),
		Machine: fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())}
}

// Met reports whether every figure with a target met it and no scenario failed.
func (r *Report) Met() bool {
	for _, s := range r.Scenarios {
		if s.Err != "" {
			return false
		}
		for _, f := range s.Figures {
			if f.Met != nil && !*f.Met {
				return false
			}
		}
	}
	return true
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the report as aligned text tables, one per scenario.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "apprun bench — %s — %s — %s\n", r.Date, r.Machine, r.GoVersion)
	fmt.Fprintf(w, "command: %s\n", r.Command)
	for _, s := range r.Scenarios {
		fmt.Fprintf(w, "\n## %s\n", s.Name)
		fmt.Fprintf(w, "command: %s\n", s.Command)
		if s.Err != "" {
			fmt.Fprintf(w, "FAILED: %s\n", s.Err)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "figure\tvalue\tunit\ttarget\tmet")
		for _, f := range s.Figures {
			met := ""
			if f.Met != nil {
				met = map[bool]string{true: "yes", false: "NO"}[*f.Met]
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Name, number(f.Value), f.Unit, f.Target, met)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, n := range s.Notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
	}
	return nil
}

func number(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}
