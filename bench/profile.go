package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// profileServer takes a CPU profile of srv (its /debug/pprof/profile,
// with the admin token) over the next d, into cfg.ServerProfiles/name.prof,
// when the bench was asked for server profiles; wait blocks until it is
// written. It is how BENCHMARKS.md shows where a server's time went.
func profileServer(ctx context.Context, cfg Config, srv *Server, name string, d time.Duration) (wait func()) {
	if cfg.ServerProfiles == "" || d < time.Second {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", srv.URL, int(d/time.Second))
		if err := fetchProfile(ctx, srv, url, filepath.Join(cfg.ServerProfiles, name+".prof")); err != nil {
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
	if err := fetchProfile(ctx, srv, srv.URL+"/debug/pprof/heap?gc=1", filepath.Join(cfg.ServerProfiles, name+".prof")); err != nil {
		fmt.Fprintf(cfg.Log, "bench: server heap profile %s: %v\n", name, err)
	}
}

func fetchProfile(ctx context.Context, srv *Server, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+srv.AdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.ReadFrom(resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
