package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// Report is one scenario's measurement: figures, each with its target
// when the issue sets one.
type Report struct {
	Scenario  string    `json:"scenario"`
	Title     string    `json:"title"`
	Started   time.Time `json:"started"`
	Seconds   float64   `json:"seconds"`
	LoadStart string    `json:"load_before"` // /proc/loadavg, 1, 5 and 15 min
	LoadEnd   string    `json:"load_after"`
	NodeEnv   []string  `json:"node_env,omitempty"`
	Figures   []Figure  `json:"figures"`
	Notes     []string  `json:"notes,omitempty"`
}

// Figure is one measured value. Met is set when there is a target.
type Figure struct {
	Name   string `json:"name"`
	Value  any    `json:"value"`
	Unit   string `json:"unit,omitempty"`
	Target string `json:"target,omitempty"`
	Met    *bool  `json:"met,omitempty"`
}

func newReport(scenario, title string) *Report {
	return &Report{Scenario: scenario, Title: title, Started: time.Now(), LoadStart: loadAvg()}
}

// add records a figure without a target.
func (r *Report) add(name string, value any, unit string) {
	r.Figures = append(r.Figures, Figure{Name: name, Value: rounded(value), Unit: unit})
}

// check records a figure against its target.
func (r *Report) check(name string, value any, unit, target string, met bool) {
	r.Figures = append(r.Figures, Figure{Name: name, Value: rounded(value), Unit: unit, Target: target, Met: &met})
}

// rounded keeps a float to 3 decimals (the JSON then shows what the text
// does, not a float's noise).
func rounded(v any) any {
	if f, ok := v.(float64); ok {
		return math.Round(f*1000) / 1000
	}
	return v
}

// note records a remark printed under the figures.
func (r *Report) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// finish records the time taken and the load at the end (once).
func (r *Report) finish() {
	if r.LoadEnd != "" {
		return
	}
	r.Seconds = time.Since(r.Started).Round(time.Millisecond).Seconds()
	r.LoadEnd = loadAvg()
}

// Missed is the number of targets not met.
func (r *Report) Missed() (missed, targets int) {
	for _, f := range r.Figures {
		if f.Met != nil {
			targets++
			if !*f.Met {
				missed++
			}
		}
	}
	return missed, targets
}

// Print writes the report as text, one line a figure.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "== %s: %s\n", r.Scenario, r.Title)
	fmt.Fprintf(w, "started %s, took %.1f s; load average before %s, after %s\n",
		r.Started.Format(time.RFC3339), r.Seconds, r.LoadStart, r.LoadEnd)
	if len(r.NodeEnv) > 0 {
		fmt.Fprintf(w, "node: apprun serve --dev with %s\n", strings.Join(r.NodeEnv, " "))
	}
	width := 0
	for _, f := range r.Figures {
		width = max(width, len(f.Name))
	}
	for _, f := range r.Figures {
		line := fmt.Sprintf("%-*s  %s", width, f.Name, formatValue(f.Value, f.Unit))
		if f.Met != nil {
			verdict := "met"
			if !*f.Met {
				verdict = "NOT MET"
			}
			line = fmt.Sprintf("%-*s  target %s: %s", width+28, line, f.Target, verdict)
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	missed, targets := r.Missed()
	switch {
	case targets == 0:
	case missed == 0:
		fmt.Fprintf(w, "result: all %d targets met\n", targets)
	default:
		fmt.Fprintf(w, "result: %d of %d targets NOT met\n", missed, targets)
	}
	fmt.Fprintln(w)
}

func formatValue(v any, unit string) string {
	var s string
	switch x := v.(type) {
	case float64:
		switch unit {
		case "MiB", "s/s":
			s = fmt.Sprintf("%.1f", x)
		case "s":
			s = fmt.Sprintf("%.3f", x)
		default:
			s = fmt.Sprintf("%.1f", x)
		}
	default:
		s = fmt.Sprint(v)
	}
	if unit != "" {
		s += " " + unit
	}
	return s
}

// mib is bytes in MiB.
func mib(b int64) float64 { return float64(b) / (1 << 20) }

// writeJSON writes every report to path as one JSON document.
func writeJSON(path string, reports []*Report) error {
	b, err := json.MarshalIndent(map[string]any{"reports": reports}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// progress says what the tool is doing, on stderr (the report goes to
// stdout).
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// counts formats a tally as "401×120 429×1380", most frequent first.
func counts(m map[string]int) string {
	type kv struct {
		k string
		n int
	}
	var all []kv
	for k, n := range m {
		all = append(all, kv{k, n})
	}
	slices.SortFunc(all, func(a, b kv) int {
		if a.n != b.n {
			return b.n - a.n
		}
		return strings.Compare(a.k, b.k)
	})
	var parts []string
	for _, e := range all {
		parts = append(parts, fmt.Sprintf("%s×%d", e.k, e.n))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}
