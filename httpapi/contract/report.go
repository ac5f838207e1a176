package contract

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// Report is what one test package's checkers saw: the documented success
// answers ("operationId status") and how many responses each validated
// "operationId status" pair had. Test packages write one each (WriteTo);
// Sum adds them up over a suite.
type Report struct {
	Operations []string       `json:"operations"`
	Seen       map[string]int `json:"seen"`
}

// WriteTo writes r into dir as name's report (name and the process id
// make it unique).
func (r Report) WriteTo(dir, name string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name+"."+strconv.Itoa(os.Getpid())+".json"), data, 0o644)
}

// Sum adds up the reports in dir.
func Sum(dir string) (Report, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return Report{}, err
	}
	total := Report{Seen: map[string]int{}}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return Report{}, err
		}
		var r Report
		if err := json.Unmarshal(data, &r); err != nil {
			return Report{}, fmt.Errorf("%s: %w", f, err)
		}
		for k, n := range r.Seen {
			total.Seen[k] += n
		}
		for _, op := range r.Operations {
			if !slices.Contains(total.Operations, op) {
				total.Operations = append(total.Operations, op)
			}
		}
	}
	slices.Sort(total.Operations)
	return total, nil
}

// Missing lists the documented success answers no test saw.
func (r Report) Missing() []string {
	var out []string
	for _, op := range r.Operations {
		if r.Seen[op] == 0 {
			out = append(out, op)
		}
	}
	return out
}

// Print writes the pairs validated and their counts.
func (r Report) Print(w io.Writer) {
	pairs := slices.Sorted(maps.Keys(r.Seen))
	n := 0
	for _, v := range r.Seen {
		n += v
	}
	fmt.Fprintf(w, "contract test: %d distinct (operation, status) pairs validated, %d responses\n", len(pairs), n)
	for _, p := range pairs {
		fmt.Fprintf(w, "  %-28s %d\n", p, r.Seen[p])
	}
}
