package bench

import (
	"context"
	"fmt"
	"time"
)

// runScenario times built-in cold-email-writer runs end to end, one after
// another: from sending POST /api/v1/runs to receiving the completed event
// on the run's stream.
func runScenario(ctx context.Context, cfg Config, s *Scenario) error {
	srv, key, err := serverAndKey(ctx, cfg)
	if err != nil {
		return err
	}
	defer srv.Stop()
	client := newClient()
	lat := &latencies{}
	for i := range cfg.Runs + 10 {
		t := time.Now()
		runNo, err := srv.create(ctx, key, coldEmailRun())
		if err != nil {
			return err
		}
		var end string
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		err = srv.stream(rctx, client, key, runNo, 0, nil, func(ev event) bool {
			end = ev.Type
			return !terminal(ev.Type)
		})
		cancel()
		if err != nil {
			return err
		}
		if end != "completed" {
			return fmt.Errorf("run %s ended with %q (no end within a minute: the server's executors busy?)", runNo, end)
		}
		if i >= 10 { // the first few warm up
			lat.add(time.Since(t))
		}
	}
	sum := lat.summary()
	s.atMost("run end to end p50", ms(sum.P50), "ms", 8)
	s.add("run end to end p90", ms(sum.P90), "ms")
	s.add("run end to end p99", ms(sum.P99), "ms")
	s.add("run end to end max", ms(sum.Max), "ms")
	s.note("%d cold-email-writer runs with the built-in writer, one at a time, POST sent to completed received on the stream", sum.N)
	return nil
}
