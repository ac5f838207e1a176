package bench

import (
	"fmt"
	"slices"
)

// flatRule is how much a sampled quantity may grow over a soak and still
// count as flat: its end may exceed its start by Rel of the start plus
// Abs. Only growth counts against it: a leak grows, and a node that
// restarted shows less than before, which is no fault.
type flatRule struct{ Rel, Abs float64 }

func (r flatRule) String() string {
	return fmt.Sprintf("end ≤ start × %g + %g", 1+r.Rel, r.Abs)
}

// flatness is the verdict on one series: Start is the median of its
// samples in the second fifth of the soak, End of those in the last
// fifth (the first fifth is warm-up: caches fill, the first kill's
// catch-up), Allowed the growth the rule allows from Start. Judged is
// false when a window had no sample (the node down all through it).
type flatness struct {
	Start, End, Allowed float64
	Judged, Flat        bool
}

// judgeFlat judges s over a soak of span seconds.
func judgeFlat(s *Series, span float64, r flatRule) flatness {
	start := window(s, span/5, 2*span/5)
	end := window(s, 4*span/5, span)
	if len(start) == 0 || len(end) == 0 {
		return flatness{}
	}
	f := flatness{Start: median(start), End: median(end), Judged: true}
	f.Allowed = f.Start*r.Rel + r.Abs
	f.Flat = f.End-f.Start <= f.Allowed
	return f
}

// window is s's values sampled in [from, to].
func window(s *Series, from, to float64) []float64 {
	var v []float64
	for i, t := range s.T {
		if t >= from && t <= to {
			v = append(v, s.V[i])
		}
	}
	return v
}

// median is the middle value (the mean of the two middle ones), 0 for none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}
