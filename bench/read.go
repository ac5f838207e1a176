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
// then a minimal net/http handler answering the same bytes to the same
// client, and reports the ratio.
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
	res := loadServer(ctx, cfg, srv, "read", cfg.ReadConcurrency, get)
	s.loadErrors("read", res)
	srv.Stop()

	minimal, err := minimalHandler(ctx, cfg, body)
	if err != nil {
		return err
	}
	s.loadErrors("minimal handler", minimal)
	s.add("reads", res.perSecond(), "/s")
	s.latency("read", res.lat.summary())
	s.add("minimal net/http handler", minimal.perSecond(), "/s")
	s.latency("minimal", minimal.lat.summary())
	s.atLeast("read ÷ minimal handler", res.perSecond()/minimal.perSecond(), "ratio", 0.9)
	s.note("concurrency %d, one key, %s per phase; the run is a finished cold-email-writer run (%d-byte answer); the minimal handler is a bare net/http server writing the same bytes, a child process like apprun (`apprun bench serve-minimal`)",
		cfg.ReadConcurrency, cfg.Duration, len(body))
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

// minimalHandler serves body from a bare net/http server in a child
// process and loads it exactly as the read phase loads apprun.
func minimalHandler(ctx context.Context, cfg Config, body []byte) (loadResult, error) {
	m, err := startMinimal(ctx, cfg.Binary, body)
	if err != nil {
		return loadResult{}, err
	}
	defer m.Stop()
	get := func(ctx context.Context, _ int) error {
		st, data, err := m.do(ctx, "GET", "/api/v1/runs/x", "k", nil)
		if err == nil && (st != 200 || len(data) != len(body)) {
			err = fmt.Errorf("minimal: %d", st)
		}
		return err
	}
	return loadServer(ctx, cfg, m, "read-minimal", cfg.ReadConcurrency, get), nil
}
