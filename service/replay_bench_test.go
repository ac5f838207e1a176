package service_test

import (
	"context"
	"testing"

	"github.com/apprun/apprun/engine"

	"github.com/apprun/apprun/service"
)

// BenchmarkRunLogReplay measures reading a 1,000-event run log back for a
// resumed stream: the batched direct gets, decoding each event and
// encoding its public data (Follower.Catchup).
//
//	go test ./service -run '^$' -bench RunLogReplay -benchtime 200x
func BenchmarkRunLogReplay(b *testing.B) {
	e := startEngine(b, true, engine.Limits{}, okApp())
	runNo, last := service.NewRunNo(), uint64(0)
	for i := range 1000 {
		seq, err := e.WriteRunEvent(context.Background(), runNo, last, engine.RunEvent{Type: engine.ToolRunning, ToolRun: &engine.ToolRun{Step: &engine.Step{Index: i, Total: 1000, Tool: "tick", Message: "tick"}}})
		if err != nil {
			b.Fatal(err)
		}
		last = seq
	}
	b.ResetTimer()
	for b.Loop() {
		f := e.Follow(runNo, 0)
		evs, err := f.Catchup(context.Background())
		f.Close()
		if err != nil || len(evs) != 1000 {
			b.Fatalf("%d events, %v", len(evs), err)
		}
	}
}
