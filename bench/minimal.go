package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/exec"
	"path/filepath"
)

// ServeMinimal is the read scenario's baseline server: a bare net/http
// handler answering every request with the bytes of bodyFile. The bench
// runs it as a child process (`apprun bench serve-minimal FILE`), exactly
// as it runs apprun, so the two differ only in what apprun's handler
// does. It answers GET /debug/pprof/profile too, for the bench's
// --server-profiles. It logs its address the way `apprun serve` does and
// serves until ctx ends.
func ServeMinimal(ctx context.Context, bodyFile string, log io.Writer) error {
	body, err := os.ReadFile(bodyFile)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/debug/pprof/profile" {
			// The bench's --server-profiles profiles this server as it
			// profiles apprun, so the two profiles compare.
			pprof.Profile(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})}
	fmt.Fprintf(log, "apprun serving addr=%s (minimal handler)\n", ln.Addr())
	go func() {
		<-ctx.Done()
		_ = hs.Close()
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// startMinimal starts ServeMinimal answering body as a child process.
func startMinimal(ctx context.Context, bin string, body []byte) (*Server, error) {
	return startChild(ctx, "", func(dir string) *exec.Cmd {
		file := filepath.Join(dir, "body.json")
		if err := os.WriteFile(file, body, 0o600); err != nil {
			file = "/nonexistent/" + err.Error()
		}
		return exec.Command(bin, "bench", "serve-minimal", file)
	})
}
