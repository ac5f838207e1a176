package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/apprun/apprun/apps"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service"
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
	warm := time.Now()
	profiled := func() {} // waits for the profile; again is at once
	defer func() { profiled() }()
	for i := range cfg.Runs + 10 {
		if i == 10 {
			// The timed runs, profiled when asked: as long as the warm-up
			// runs say they will take, in whole seconds, at least one.
			profiled = profileServer(ctx, cfg, srv, "run", max(time.Second, time.Since(warm)*time.Duration(cfg.Runs)/10))
		}
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
	profiled()
	sum := lat.summary()
	s.atMost("run end to end p50", ms(sum.P50), "ms", 8)
	s.add("run end to end p90", ms(sum.P90), "ms")
	s.add("run end to end p99", ms(sum.P99), "ms")
	s.add("run end to end max", ms(sum.Max), "ms")
	s.note("%d cold-email-writer runs with the built-in writer, one at a time, POST sent to completed received on the stream", sum.N)
	srv.Stop() // the bare writes have the machine to themselves
	bare, err := bareRuns(ctx, cfg.Runs)
	if err != nil {
		return fmt.Errorf("bare run writes: %w", err)
	}
	s.add("bare writes of one run p50", ms(bare.run.P50), "ms")
	s.add("bare writes of one run p90", ms(bare.run.P90), "ms")
	s.add("  admission p50", ms(bare.admission.P50), "ms")
	s.add("  started and 6 steps p50", ms(bare.events.P50), "ms")
	s.add("  finish p50", ms(bare.finish.P50), "ms")
	s.add("run ÷ bare writes p50", ms(sum.P50)/ms(bare.run.P50), "ratio")
	s.note("bare writes of one run: what a run writes, one write after another as the server makes them, straight to an embedded JetStream in this process with SyncAlways (the bench's probe, engine.AdmissionWrites, RunEventWrite and FinishWrites): the create window, the admission's atomic batch, started, 6 steps, and the finish's atomic batch (settle, slot release, completed); %d runs after 10 to warm up", bare.run.N)
	return nil
}

// bareRunTimes summarise bareRuns: whole runs and each part.
type bareRunTimes struct {
	run, admission, events, finish summary
}

// bareRuns times n runs' writes (probe.run), one run at a time, on a
// bare node (onBareNode).
func bareRuns(ctx context.Context, n int) (bareRunTimes, error) {
	var run, admission, events, finish latencies
	err := onBareNode(ctx, apps.Default(), true, func(e *service.Service, ports port.Set) error {
		p, err := newProbe(ctx, e, ports, apps.ColdEmailSlug, 1_000_000_000, 1)
		if err != nil {
			return err
		}
		for i := range n + 10 {
			t := time.Now()
			_, took, err := p.run(ctx, 6, []byte(sampleOutput))
			if err != nil {
				return err
			}
			if i >= 10 {
				run.add(time.Since(t))
				admission.add(took.admission)
				events.add(took.events)
				finish.add(took.finish)
			}
		}
		return nil
	})
	return bareRunTimes{run.summary(), admission.summary(), events.summary(), finish.summary()}, err
}
