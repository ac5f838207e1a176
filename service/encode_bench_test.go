package service_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/service"
)

// BenchmarkEventEncoding measures the two encodings every run event goes
// through: to the log (the stored message) and to a client (decoding the
// stored payload and encoding its public data, once per live event).
//
//	go test ./service -run '^$' -bench EventEncoding
func BenchmarkEventEncoding(b *testing.B) {
	ev := engine.RunEvent{Type: engine.ToolRunning, V: 1, At: time.Now().UTC(), RunNo: "run_abcdefghij", ToolRun: &engine.ToolRun{Step: &engine.Step{Index: 3, Total: 6, Tool: "write_email", Message: "writing touch 2 of 3"}}}
	b.Run("log", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := service.EncodeEntry(ev); err != nil {
				b.Fatal(err)
			}
		}
	})
	data, _ := json.Marshal(ev)
	b.Run("stream", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var e engine.RunEvent
			if err := json.Unmarshal(data, &e); err != nil {
				b.Fatal(err)
			}
			if se, ok := service.Streamed(42, e); !ok || len(se.Data) == 0 {
				b.Fatal("not streamed")
			}
		}
	})
}
