package engine

import (
	"context"
	"testing"
)

// BenchmarkRunLogReplay measures reading a 1,000-event run log back for a
// resumed stream: the batched direct gets, decoding each event and
// encoding its public data (Follower.Catchup).
//
//	go test ./engine -run '^$' -bench RunLogReplay -benchtime 200x
func BenchmarkRunLogReplay(b *testing.B) {
	e := startEngine(b, true, Limits{}, okApp())
	w := &runWriter{e: e, run: Run{RunNo: newID(PrefixRun, 10)}}
	for i := range 1000 {
		if err := w.write(context.Background(), RunEvent{Type: ToolRunning, Step: &Step{Index: i, Total: 1000, Tool: "tick", Message: "tick"}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		f := e.Follow(w.run.RunNo, 0)
		evs, err := f.Catchup(context.Background())
		f.Close()
		if err != nil || len(evs) != 1000 {
			b.Fatalf("%d events, %v", len(evs), err)
		}
	}
}
