package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Server is the apprun server a scenario drives: a child process the bench
// started (so its memory can be read) or one already running.
type Server struct {
	URL        string
	AdminToken string
	client     *http.Client
	cmd        *exec.Cmd
	dir        string
	exited     chan struct{}
	// recipe makes the process's command for its directory: a restart
	// (restart) runs it again on the same directory.
	recipe func(dir string) *exec.Cmd

	// Name is a cluster node's server name: the test App's ticks say
	// which node ran them by it ("tick on <name>").
	Name string
}

// high are the limits a bench server runs with: on, as shipped, but too
// high to refuse anything the bench sends.
var high = []string{
	"APPRUN_CREATE_PER_MIN=100000000",
	"APPRUN_READS_PER_MIN=100000000",
	"APPRUN_OWNER_ACTIVE_RUNS=1000000",
	"APPRUN_PLATFORM_ACTIVE_RUNS=1000000",
	"APPRUN_STREAMS_PER_KEY=1000000",
	"APPRUN_STREAMS_PER_ACCOUNT=1000000",
	// The bench's clients are one address, and thousands of connections.
	"APPRUN_CONNS_PER_ADDR=0",
	"APPRUN_MAX_CONNS=0",
	"APPRUN_TEST_APPS=1",
}

// startServer runs `bin serve` in a new temporary data directory with the
// bench limits (and env) and waits until it is healthy.
func startServer(ctx context.Context, bin string, env ...string) (*Server, error) {
	token := randomHex(16)
	return startChild(ctx, token, func(dir string) *exec.Cmd {
		cmd := exec.Command(bin, "serve")
		cmd.Env = append(append(append(os.Environ(), high...),
			"APPRUN_ADDR=127.0.0.1:0", "APPRUN_DATA="+filepath.Join(dir, "data"), "APPRUN_ADMIN_TOKEN="+token), env...)
		return cmd
	})
}

// startChild starts the process cmd makes in a new temporary directory,
// takes its address from the "apprun serving ... addr=" line it logs on
// stderr, and waits until it answers /healthz.
func startChild(ctx context.Context, adminToken string, cmdIn func(dir string) *exec.Cmd) (*Server, error) {
	dir, err := os.MkdirTemp("", "apprun-bench-")
	if err != nil {
		return nil, err
	}
	s, err := launch(ctx, adminToken, dir, cmdIn)
	if s == nil {
		os.RemoveAll(dir)
	}
	return s, err
}

// restart starts s's process again on its directory, after it was killed
// or halted: a new Server, whose address may differ from s's (the
// children listen on port 0).
func (s *Server) restart(ctx context.Context) (*Server, error) {
	return launch(ctx, s.AdminToken, s.dir, s.recipe)
}

// launch starts cmdIn's process in dir and waits until it is healthy. It
// returns no Server when the process did not start or exited at once;
// otherwise the Server, running, and whether it became healthy.
func launch(ctx context.Context, adminToken, dir string, cmdIn func(dir string) *exec.Cmd) (*Server, error) {
	s := &Server{AdminToken: adminToken, dir: dir, client: newClient(), exited: make(chan struct{}), recipe: cmdIn}
	s.cmd = cmdIn(dir)
	// Appended to: a restarted process's log follows its former life's.
	logf, err := os.OpenFile(filepath.Join(dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	s.cmd.Stdout = logf
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", strings.Join(s.cmd.Args, " "), err)
	}
	addr := make(chan string, 1)
	go func() {
		defer close(s.exited)
		defer logf.Close()
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, line)
			if i := strings.Index(line, " addr="); i >= 0 && strings.Contains(line, "apprun serving") {
				select {
				case addr <- strings.Fields(line[i+6:])[0]:
				default:
				}
			}
		}
		_ = s.cmd.Wait()
	}()
	select {
	case a := <-addr:
		s.URL = "http://" + a
	case <-s.exited:
		log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
		return nil, fmt.Errorf("server exited at start:\n%s", log)
	case <-time.After(60 * time.Second):
		s.kill()
		return nil, errors.New("server did not start within 60s")
	case <-ctx.Done():
		s.kill()
		return nil, ctx.Err()
	}
	return s, s.waitHealthy(ctx)
}

// useServer drives a server that is already running.
func useServer(ctx context.Context, url, adminToken string) (*Server, error) {
	s := &Server{URL: strings.TrimRight(url, "/"), AdminToken: adminToken, client: newClient()}
	return s, s.waitHealthy(ctx)
}

func (s *Server) waitHealthy(ctx context.Context) error {
	return s.awaitOK(ctx, "/healthz", 60*time.Second)
}

// awaitOK waits until GET path answers 200, for at most within.
func (s *Server) awaitOK(ctx context.Context, path string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		st, body, err := s.do(ctx, "GET", path, "", nil)
		if err == nil && st == 200 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server %s: GET %s not 200 within %s (status %d %s, %v)", s.URL, path, within, st, body, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop stops a server the bench started and removes its data.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	s.halt()
	os.RemoveAll(s.dir)
	s.cmd = nil
}

// halt stops the process (SIGTERM, then SIGKILL after 20 s) and keeps its
// directory: an audit reads it, or a restart runs on it.
func (s *Server) halt() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		s.kill()
	}
}

// kill ends the process at once (SIGKILL: no shutdown of any kind, as a
// crash or a lost machine) and keeps its directory.
func (s *Server) kill() {
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.client.CloseIdleConnections()
}

// pid is the process's id (0 when the bench did not start it).
func (s *Server) pid() int {
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// RSS is the server's resident memory in bytes (0 when not a child).
func (s *Server) RSS() (int64, error) {
	if s.cmd == nil {
		return 0, errors.New("not a server this bench started")
	}
	return rssOf(s.cmd.Process.Pid)
}

// FDs is how many file descriptors the server holds open.
func (s *Server) FDs() (int, error) {
	if s.cmd == nil {
		return 0, errors.New("not a server this bench started")
	}
	return fdsOf(s.cmd.Process.Pid)
}

// fdsOf counts the open descriptors of process pid.
func fdsOf(pid int) (int, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(fds), err
}

// rssOf is the resident memory of process pid in bytes.
func rssOf(pid int) (int64, error) {
	v, err := statusBytes(pid, "VmRSS:")
	return v[0], err
}

// Memory is the server's resident memory and the part of it that is
// pages of mapped files (its binary, and the read models' bbolt file,
// which grows with the log), not memory of its own: one read of /proc.
func (s *Server) Memory() (rss, files int64, err error) {
	if s.cmd == nil {
		return 0, 0, errors.New("not a server this bench started")
	}
	v, err := statusBytes(s.cmd.Process.Pid, "VmRSS:", "RssFile:")
	return v[0], v[1], err
}

// statusBytes reads sizes in kB from process pid's /proc status, by
// their field names (with the colon), in bytes, in the order asked.
func statusBytes(pid int, fields ...string) ([]int64, error) {
	out := make([]int64, len(fields))
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return out, err
	}
	found := 0
	for line := range strings.SplitSeq(string(data), "\n") {
		for i, f := range fields {
			if rest, ok := strings.CutPrefix(line, f); ok {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				if err != nil {
					return out, fmt.Errorf("%s in /proc status: %w", f, err)
				}
				out[i], found = kb<<10, found+1
			}
		}
	}
	if found < len(fields) {
		return out, fmt.Errorf("not all of %v in /proc status", fields)
	}
	return out, nil
}

func newClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConns: 4096, MaxIdleConnsPerHost: 4096,
		IdleConnTimeout: time.Minute, DisableCompression: true}}
}

// do sends one request with a JSON body (nil for none) and reads the answer.
func (s *Server) do(ctx context.Context, method, path, bearer string, body any) (int, []byte, error) {
	return s.doWith(ctx, method, path, bearer, nil, body)
}

// doWith is do with more headers.
func (s *Server) doWith(ctx context.Context, method, path, bearer string, hdr http.Header, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// account opens an account with credits and returns its API key.
func (s *Server) account(ctx context.Context, credits int64) (string, error) {
	st, body, err := s.do(ctx, "POST", "/admin/v1/accounts", s.AdminToken, map[string]any{"email": "bench@example.com", "credits": credits})
	if err != nil {
		return "", err
	}
	if st != 201 {
		return "", fmt.Errorf("open account: %d %s", st, body)
	}
	var a struct {
		APIKey string `json:"api_key"`
	}
	return a.APIKey, json.Unmarshal(body, &a)
}

// accounts opens n accounts.
func (s *Server) accounts(ctx context.Context, n int, credits int64) ([]string, error) {
	keys := make([]string, n)
	for i := range keys {
		var err error
		if keys[i], err = s.account(ctx, credits); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// create creates a run and returns its number.
func (s *Server) create(ctx context.Context, key string, body any) (string, error) {
	st, data, err := s.do(ctx, "POST", "/api/v1/runs", key, body)
	if err != nil {
		return "", err
	}
	if st != 201 {
		return "", fmt.Errorf("create run: %d %s", st, data)
	}
	var r struct {
		RunNo string `json:"run_no"`
	}
	return r.RunNo, json.Unmarshal(data, &r)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// sleepRun is a test-sleep run that stays active (sleeping) for ms and
// reports steps ticks meanwhile.
func sleepRun(ms, steps int) map[string]any {
	in := map[string]any{"ms": ms}
	if steps > 0 {
		in["steps"] = steps
	}
	return map[string]any{"app_slug": "test-sleep", "input": in}
}

func coldEmailRun() map[string]any {
	return map[string]any{"app_slug": "cold-email-writer", "input": map[string]any{
		"product_description": "Acme Ledger automates bookkeeping for small agencies.", "target_role": "Agency founders"}}
}

// goMetrics reads the server's Go runtime gauges from /metrics:
// goroutines, stack and heap bytes in use.
func (s *Server) goMetrics(ctx context.Context) (goroutines, stack, heap float64, err error) {
	m, err := s.metrics(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	return m["go_goroutines"], m["go_memstats_stack_inuse_bytes"], m["go_memstats_heap_inuse_bytes"], nil
}

// metrics reads the server's unlabelled metrics from /metrics, by name.
func (s *Server) metrics(ctx context.Context) (map[string]float64, error) {
	st, body, err := s.do(ctx, "GET", "/metrics", "", nil)
	if err != nil || st != 200 {
		return nil, fmt.Errorf("GET /metrics: %d %v", st, err)
	}
	m := map[string]float64{}
	for line := range strings.SplitSeq(string(body), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
			m[name] = v
		}
	}
	return m, nil
}
