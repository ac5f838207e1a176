package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"
)

// loadServer warms srv up with op for a second, then measures the phase,
// profiling srv through it when asked (profileServer, as name).
func loadServer(ctx context.Context, cfg Config, srv *Server, name string, workers int, op func(context.Context, int) error) loadResult {
	load(ctx, workers, time.Second, op)
	profiled := profileServer(ctx, cfg, srv, name, cfg.Duration-time.Second)
	defer profiled()
	return load(ctx, workers, cfg.Duration, op)
}

// profileServer takes a CPU profile of srv (its /debug/pprof/profile,
// with the admin token) over the next d, into cfg.ServerProfiles/name.prof,
// when the bench was asked for server profiles; wait blocks until it is
// written (and returns at once when called again). It is how
// BENCHMARKS.md shows where a server's time went.
func profileServer(ctx context.Context, cfg Config, srv *Server, name string, d time.Duration) (wait func()) {
	if cfg.ServerProfiles == "" || d < time.Second {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		path := fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(d/time.Second))
		if err := fetchProfile(ctx, srv, path, filepath.Join(cfg.ServerProfiles, name+".prof")); err != nil {
			fmt.Fprintf(cfg.Log, "bench: server profile %s: %v\n", name, err)
		}
	}()
	return func() { <-done }
}

// heapProfile writes the server's heap profile (after a collection) into
// cfg.ServerProfiles/name.prof, when the bench was asked for profiles.
func heapProfile(ctx context.Context, cfg Config, srv *Server, name string) {
	if cfg.ServerProfiles == "" {
		return
	}
	if err := fetchProfile(ctx, srv, "/debug/pprof/heap?gc=1", filepath.Join(cfg.ServerProfiles, name+".prof")); err != nil {
		fmt.Fprintf(cfg.Log, "bench: server heap profile %s: %v\n", name, err)
	}
}

// fetchProfile writes the answer to GET path (with the admin token) into
// the file at to.
func fetchProfile(ctx context.Context, srv *Server, path, to string) error {
	st, data, err := srv.do(ctx, "GET", path, srv.AdminToken, nil)
	if err == nil && st != 200 {
		err = fmt.Errorf("GET %s: %d %s", path, st, data)
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o644)
}

// StartCPUProfile profiles this process into a new file at path until
// stop is called. It fails when a profile is already running (Go runs
// one at a time), and then leaves no empty file behind to be mistaken for
// a profile.
func StartCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// profileProcess takes a CPU profile of the bench process itself until
// the returned func is called, into cfg.ServerProfiles/name.prof, when
// the bench was asked for server profiles: the replay's rebuild runs its
// node's applier and JetStream in this process. A profile already running
// (--cpuprofile) is left alone, and this one skipped.
func profileProcess(cfg Config, name string) (stop func()) {
	if cfg.ServerProfiles == "" {
		return func() {}
	}
	stopProfile, err := func() (func() error, error) {
		if err := os.MkdirAll(cfg.ServerProfiles, 0o755); err != nil {
			return nil, err
		}
		return StartCPUProfile(filepath.Join(cfg.ServerProfiles, name+".prof"))
	}()
	if err != nil {
		fmt.Fprintf(cfg.Log, "bench: profile %s: %v\n", name, err)
		return func() {}
	}
	return func() {
		if err := stopProfile(); err != nil {
			fmt.Fprintf(cfg.Log, "bench: profile %s: %v\n", name, err)
		}
	}
}
