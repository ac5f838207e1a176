package bench

import (
	"context"
	"fmt"
	"net/http"
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
	sides := []runSide{{srv: srv, key: key, lat: &latencies{}}}
	if cfg.URL == "" {
		// The same runs on a server that keeps no run records
		// (APPRUN_RUN_RECORD=off), one run here, one there: what recording
		// costs a run, with the host's drift falling on both alike.
		off, err := startServer(ctx, cfg.Binary, "APPRUN_RUN_RECORD=off")
		if err != nil {
			return err
		}
		defer off.Stop()
		offKey, err := off.account(ctx, 1_000_000_000)
		if err != nil {
			return err
		}
		sides = append(sides, runSide{srv: off, key: offKey, lat: &latencies{}})
	}
	if err := timeRuns(ctx, cfg, sides); err != nil {
		return err
	}
	sum := sides[0].lat.summary()
	s.atMost("run end to end p50", ms(sum.P50), "ms", 8)
	s.add("run end to end p90", ms(sum.P90), "ms")
	s.add("run end to end p99", ms(sum.P99), "ms")
	s.add("run end to end max", ms(sum.Max), "ms")
	s.note("%d cold-email-writer runs with the built-in writer, one at a time, POST sent to completed received on the stream", sum.N)
	if len(sides) == 2 {
		off := sides[1].lat.summary()
		s.add("run end to end p50, no record", ms(off.P50), "ms")
		s.add("run end to end p99, no record", ms(off.P99), "ms")
		s.add("run with record ÷ without p50", ms(sum.P50)/ms(off.P50), "ratio")
		s.note("no record: the same runs on a second server with APPRUN_RUN_RECORD=off, alternating with the first run by run; a recorded built-in run writes one more event, its record's start")
	}
	for _, side := range sides {
		side.srv.Stop() // the bare writes have the machine to themselves
	}
	bare, err := bareRuns(ctx, cfg.Runs)
	if err != nil {
		return fmt.Errorf("bare run writes: %w", err)
	}
	s.add("bare writes of one run p50", ms(bare.run.P50), "ms")
	s.add("bare writes of one run p90", ms(bare.run.P90), "ms")
	s.add("  admission p50", ms(bare.admission.P50), "ms")
	s.add("  started, record start and 6 steps p50", ms(bare.events.P50), "ms")
	s.add("  finish p50", ms(bare.finish.P50), "ms")
	s.add("run ÷ bare writes p50", ms(sum.P50)/ms(bare.run.P50), "ratio")
	s.note("bare writes of one run: what a run writes, one write after another as the server makes them, straight to an embedded JetStream in this process with SyncAlways (the bench's probe, engine.AdmissionWrites, RunEventWrite and FinishWrites): the create window, the admission's atomic batch, started, the record's start, 6 steps, and the finish's atomic batch (settle, slot release, completed); %d runs after 10 to warm up", bare.run.N)
	return nil
}

// runSide is a server the run scenario times, and its runs' times.
type runSide struct {
	srv *Server
	key string
	lat *latencies
}

// timeRuns times cfg.Runs runs a side after 10 to warm up, one at a
// time, the sides taking turns run by run; the first side's are
// profiled when asked.
func timeRuns(ctx context.Context, cfg Config, sides []runSide) error {
	client := newClient()
	warm := time.Now()
	profiled := func() {} // waits for the profile; again is at once
	defer func() { profiled() }()
	for i := range cfg.Runs + 10 {
		if i == 10 {
			// The timed runs, profiled when asked: as long as the warm-up
			// runs say they will take, in whole seconds, at least one.
			profiled = profileServer(ctx, cfg, sides[0].srv, "run", max(time.Second, time.Since(warm)*time.Duration(cfg.Runs)/10))
		}
		for _, side := range sides {
			took, err := oneRun(ctx, client, side.srv, side.key)
			if err != nil {
				return err
			}
			if i >= 10 { // the first few warm up
				side.lat.add(took)
			}
		}
	}
	profiled()
	return nil
}

// oneRun times one run from its POST to its completed event.
func oneRun(ctx context.Context, client *http.Client, srv *Server, key string) (time.Duration, error) {
	t := time.Now()
	runNo, err := srv.create(ctx, key, coldEmailRun())
	if err != nil {
		return 0, err
	}
	var end string
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = srv.stream(rctx, client, key, runNo, 0, nil, func(ev event) bool {
		end = ev.Type
		return !terminal(ev.Type)
	})
	if err != nil {
		return 0, err
	}
	if end != "completed" {
		return 0, fmt.Errorf("run %s ended with %q (no end within a minute: the server's executors busy?)", runNo, end)
	}
	return time.Since(t), nil
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
