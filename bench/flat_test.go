package bench

import "testing"

// sampled samples f at 0, 1, ..., n-1 seconds, skipping the times down says.
func sampled(n int, f func(t float64) float64, down func(t float64) bool) *Series {
	s := &Series{Name: "RSS", Node: "node0"}
	for i := range n {
		t := float64(i)
		if down == nil || !down(t) {
			s.add(t, f(t))
		}
	}
	return s
}

func TestFlatnessJudgesGrowthBetweenTheSecondAndTheLastFifth(t *testing.T) {
	t.Parallel()
	rule := flatRule{Rel: 0.2, Abs: 5}
	never := func(float64) bool { return false }
	for _, c := range []struct {
		name         string
		f            func(t float64) float64
		down         func(t float64) bool
		judged, flat bool
		start, end   float64
	}{
		{"constant", func(float64) float64 { return 100 }, never, true, true, 100, 100},
		{"a warm-up climb is not growth", func(t float64) float64 { return min(100, 10+t*5) }, never, true, true, 100, 100},
		{"noise within the rule", func(t float64) float64 { return 100 + float64(int(t)%7) }, never, true, true, 103, 103},
		{"a steady leak", func(t float64) float64 { return 100 + t }, never, true, false, 129.5, 189.5},
		{"a restart shows less, which is flat", func(t float64) float64 {
			if t >= 70 {
				return 40
			}
			return 100
		}, never, true, true, 100, 40},
		{"a node down through the last fifth is not judged", func(float64) float64 { return 1 },
			func(t float64) bool { return t >= 75 }, false, false, 0, 0},
		{"growth just over the allowance", func(t float64) float64 {
			if t >= 80 {
				return 125.5
			}
			return 100
		}, never, true, false, 100, 125.5},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := judgeFlat(sampled(100, c.f, c.down), 99, rule)
			if got.Judged != c.judged || got.Flat != c.flat {
				t.Fatalf("judged %v flat %v (start %g end %g allowed %g), want judged %v flat %v",
					got.Judged, got.Flat, got.Start, got.End, got.Allowed, c.judged, c.flat)
			}
			if c.judged && (got.Start != c.start || got.End != c.end) {
				t.Fatalf("start %g end %g, want %g and %g", got.Start, got.End, c.start, c.end)
			}
		})
	}
}

func TestMedian(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v    []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.v); got != c.want {
			t.Errorf("median(%v) = %g, want %g", c.v, got, c.want)
		}
	}
}
