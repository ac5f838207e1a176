package trace

import (
	"slices"
	"testing"
)

// A record begins at the named function's entry and follows only the
// goroutine that made it; End closes it.
func TestARecordFollowsTheGoroutineThatEnteredFirst(t *testing.T) {
	r := Start("a.go", "Begin")
	Enter("a.go", "before") // before the named entry: not recorded
	Enter("a.go", "Begin")
	done := make(chan struct{})
	go func() { Enter("b.go", "elsewhere"); close(done) }()
	<-done
	Enter("c.go", "after")
	got := r.End()
	Enter("d.go", "closed")
	want := []Stop{{"a.go", "Begin"}, {"c.go", "after"}}
	if !slices.Equal(got, want) || !slices.Equal(r.End(), want) {
		t.Fatalf("recorded %v, want %v", got, want)
	}
}
