package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// readScenario measures GET /api/v1/runs/{run_no} of a finished run at a
// fixed concurrency, with authentication and the read limit on (set high),
// and a minimal net/http handler answering the same bytes to the same
// client, the two loaded in turn (interleave), and reports the ratio.
func readScenario(ctx context.Context, cfg Config, s *Scenario) error {
	srv, key, err := serverAndKey(ctx, cfg)
	if err != nil {
		return err
	}
	defer srv.Stop()
	runNo, err := srv.create(ctx, key, coldEmailRun())
	if err != nil {
		return err
	}
	path := "/api/v1/runs/" + runNo
	body, err := awaitFinished(ctx, srv, key, path)
	if err != nil {
		return err
	}
	get := func(ctx context.Context, _ int) error {
		st, data, err := srv.do(ctx, "GET", path, key, nil)
		if err == nil && (st != 200 || len(data) != len(body)) {
			err = fmt.Errorf("GET %s: %d %s", path, st, data)
		}
		return err
	}
	m, err := startMinimal(ctx, cfg.Binary, body)
	if err != nil {
		return err
	}
	defer m.Stop()
	getMinimal := func(ctx context.Context, _ int) error {
		st, data, err := m.do(ctx, "GET", "/api/v1/runs/x", "k", nil)
		if err == nil && (st != 200 || len(data) != len(body)) {
			err = fmt.Errorf("minimal: %d", st)
		}
		return err
	}
	const rounds = 5
	res, minimal := interleave(ctx, cfg, cfg.ReadConcurrency, rounds,
		side{srv, "read", get}, side{m, "read-minimal", getMinimal})
	s.loadErrors("read", res.res)
	s.loadErrors("minimal handler", minimal.res)
	s.add("reads", res.res.perSecond(), "/s")
	s.latency("read", res.res.lat.summary())
	s.add("minimal net/http handler", minimal.res.perSecond(), "/s")
	s.latency("minimal", minimal.res.lat.summary())
	s.atLeast("read ÷ minimal handler", res.res.perSecond()/minimal.res.perSecond(), "ratio", 0.9)
	if res.cpuKnown && minimal.cpuKnown {
		perRead := func(r interleaved) float64 { return float64(r.busyCPU.Microseconds()) / float64(max(r.res.ops, 1)) }
		s.add("server CPU per read", perRead(res), "µs")
		s.add("minimal's CPU per read", perRead(minimal), "µs")
		s.add("apprun idle in the minimal's slices", 100*res.idle.Seconds()/minimal.res.elapsed.Seconds(), "% of a core")
		s.note("CPU per read: the server process's user and system time (/proc) in its own slices over its reads; apprun idle: its CPU while the minimal handler was loaded, which the two servers' comparison carries")
	}
	s.note("concurrency %d, one key; the run is a finished cold-email-writer run (%d-byte answer); the minimal handler is a bare net/http server writing the same bytes, a child process like apprun (`apprun bench serve-minimal`)",
		cfg.ReadConcurrency, len(body))
	s.note("both servers run throughout and are loaded in turn, %d slices of %s each (apprun first, then minimal first, and so on), after a second's warm-up of each, so that the shared host's drift falls on both",
		rounds, cfg.Duration/rounds)
	return nil
}

// awaitFinished polls a run until it has finished (within 5 minutes: the
// long resume's run writes 100,000 events) and returns its answer.
func awaitFinished(ctx context.Context, srv *Server, key, path string) ([]byte, error) {
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		st, data, err := srv.do(ctx, "GET", path, key, nil)
		if err != nil {
			return nil, err
		}
		var r struct {
			Status string `json:"status"`
		}
		if st != 200 || json.Unmarshal(data, &r) != nil {
			return nil, fmt.Errorf("GET %s: %d %s", path, st, data)
		}
		if r.Status == "completed" {
			return data, nil
		}
		if r.Status == "failed" {
			return nil, fmt.Errorf("run failed: %s", data)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, errors.New("run did not finish within 5 minutes")
}
