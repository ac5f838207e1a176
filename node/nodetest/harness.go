package nodetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apprun/apprun/edge"
	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/httpapi"
	"github.com/apprun/apprun/node"
	"golang.org/x/crypto/bcrypt"
)

const AdminToken = "test-admin-token-0123456789"

type Harness struct {
	T       testing.TB
	Dir     string
	Cfg     node.Config
	Node    *node.Node
	Srv     *httptest.Server
	release chan struct{}
	relOnce *sync.Once
	faultMu sync.Mutex
	faults  []string // contract faults (contract_test.go)
	// sitePublic: Cfg.PublicURL is the harness's server's, taken by
	// siteListener (mail.go), and taken again at each boot.
	sitePublic bool
}

type Option func(*node.Config)

func WithLimits(l engine.Limits) Option { return func(c *node.Config) { c.Limits = l } }

func WithAppTimeout(slug string, d time.Duration) Option {
	return func(c *node.Config) { c.AppTimeouts = map[string]time.Duration{slug: d} }
}

func WithRetention(slug string, d time.Duration) Option {
	return func(c *node.Config) {
		c.AppRetention = map[string]time.Duration{slug: d}
		c.RetentionSweep = 20 * time.Millisecond
	}
}

func WithStreamsPerKey(n int) Option { return func(c *node.Config) { c.StreamsPerKey = n } }

func WithRequestTimeout(d time.Duration) Option {
	return func(c *node.Config) { c.RequestTimeout = d }
}

func WithLogger(l *slog.Logger) Option { return func(c *node.Config) { c.Logger = l } }

func WithWriteWait(d time.Duration) Option { return func(c *node.Config) { c.WriteWait = d } }

// WithDataDir runs the node on dir rather than a new temporary directory.
func WithDataDir(dir string) Option { return func(c *node.Config) { c.DataDir = dir } }

func WithHeartbeat(d time.Duration) Option {
	return func(c *node.Config) { c.Heartbeat = d }
}

// NoLimits leaves rate and concurrency limits off so a test pins only what it means to.
var NoLimits = engine.Limits{}

func Start(t testing.TB, opts ...Option) *Harness {
	t.Helper()
	h := &Harness{T: t, Dir: t.TempDir(), release: make(chan struct{}), relOnce: &sync.Once{}}
	// Passwords at bcrypt's least cost: under the race detector one hash
	// at the default cost takes most of a second, and the website's tests
	// sign up and in often.
	h.Cfg = node.Config{Addr: "127.0.0.1:0", AdminToken: AdminToken, Heartbeat: 15 * time.Second, PasswordCost: bcrypt.MinCost,
		Limits:   engine.Limits{CreatePerMinute: 10, ReadsPerMinute: 120, OwnerActiveRuns: 3, PlatformActiveRuns: 12},
		Refusals: httpapi.RefusalLimits{PerKeyPerMinute: 60, PerAddrPerMinute: 120}, Conns: edge.ConnLimits{PerAddr: 128}}
	for _, o := range opts {
		o(&h.Cfg)
	}
	if h.Cfg.Logger == nil {
		h.Cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if h.Cfg.DataDir == "" {
		h.Cfg.DataDir = h.Dir
	}
	h.Dir = h.Cfg.DataDir
	h.Boot()
	t.Cleanup(h.Stop)
	return h
}

func (h *Harness) apps() []engine.App {
	release := h.release
	test := engine.App{Slug: TestAppSlug, Name: "Test App", Description: "steered by tests", Price: 10,
		Timeout: time.Minute, Runnable: true, AcceptsBrandContext: true,
		InputSchema: []byte(`{"type":"object","properties":{"mode":{"enum":["ok","fail","hold","hold_fail"]}},"required":["mode"]}`),
		Executor: engine.Executor(func(ctx context.Context, job engine.Job, progress func(engine.Step)) (engine.Result, error) {
			progress(engine.Step{Index: 1, Total: 2, Tool: "first", Message: "first step"})
			mode := job.Input["mode"]
			if mode == "hold" || mode == "hold_fail" {
				select {
				case <-release:
				case <-ctx.Done():
					return engine.Result{}, ctx.Err()
				}
			}
			if mode == "fail" || mode == "hold_fail" {
				return engine.Result{}, fmt.Errorf("the test asked this run to fail")
			}
			progress(engine.Step{Index: 2, Total: 2, Tool: "second", Message: "second step"})
			return engine.Result{Summary: "done", Output: map[string]any{"ok": true}}, nil
		})}
	unpriced := engine.App{Slug: "unpriced", Name: "Unpriced", Runnable: true, InputSchema: []byte(`{"type":"object"}`),
		Executor: test.Executor}
	shipped, err := h.Cfg.LoadApps()
	if err != nil {
		h.T.Fatal(err)
	}
	return append(shipped, test, unpriced)
}

// Boot starts a node on the harness's config and data directory (Start
// does; a test that halted one boots another).
func (h *Harness) Boot() {
	h.T.Helper()
	h.Cfg.Apps = h.apps()
	site := h.siteListener() // mail.go
	n, err := node.New(h.Cfg)
	if err != nil {
		h.T.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		h.T.Fatal(err)
	}
	h.Node = n
	h.Srv = httptest.NewUnstartedServer(h.checked(n.Handler()))
	if site != nil {
		h.Srv.Listener.Close()
		h.Srv.Listener = site
	}
	reuse := edge.Reuse(h.Srv.Listener) // as the node's own server (edge/reuse.go)
	h.Srv.Listener, h.Srv.Config.ConnContext = reuse, reuse.ConnContext
	h.Srv.Start()
	h.WaitReady()
}

func (h *Harness) WaitReady() {
	h.T.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !h.Node.Reads().Ready() {
		if time.Now().After(deadline) {
			h.T.Fatal("node not ready within 20s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ReleaseHeld lets every held run finish.
func (h *Harness) ReleaseHeld() { h.relOnce.Do(func() { close(h.release) }) }

func (h *Harness) Stop() {
	h.ReleaseHeld()
	h.Halt()
}

// Halt stops the node without releasing held runs: the engine's stop
// cancels them, and they are still in flight for the next node. (A
// release first raced the stop: a released run could complete on the
// node that was stopping.)
func (h *Harness) Halt() {
	if h.Srv != nil {
		h.Srv.CloseClientConnections()
		h.Srv.Close()
		h.Srv = nil
	}
	if h.Node != nil {
		h.Node.Stop()
		h.Node = nil
	}
	h.reportFaults()
}

// Restart stops the node and starts a new one on the same data directory.
func (h *Harness) Restart() {
	h.Halt()
	h.release, h.relOnce = make(chan struct{}), &sync.Once{}
	h.Boot()
}

type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r Response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("response %d is not a JSON object: %q", r.Status, r.Body)
	}
	return m
}

// ErrorCode checks the error envelope and returns its code.
func (r Response) ErrorCode(t testing.TB) string {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error answer Content-Type %q, want application/json", ct)
	}
	var env struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal(r.Body, &env); err != nil || env.Error.Code == "" || env.Error.Message == "" {
		t.Fatalf("not the error envelope: %d %q", r.Status, r.Body)
	}
	return env.Error.Code
}

// Raw is a request body sent as it is, with its own Content-Type.
type Raw struct{ Body, ContentType string }

// RawBody is a request body sent as it is, with its own Content-Type.
func RawBody(body, contentType string) Raw { return Raw{Body: body, ContentType: contentType} }

func (h *Harness) Do(method, path, key string, body any, hdr ...string) Response {
	h.T.Helper()
	var rd io.Reader
	ctype := "application/json"
	switch b := body.(type) {
	case nil:
	case Raw:
		rd, ctype = strings.NewReader(b.Body), b.ContentType
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, _ := json.Marshal(b)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, h.Srv.URL+path, rd)
	if err != nil {
		h.T.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", ctype)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.T.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return Response{resp.StatusCode, resp.Header, data}
}

// Send is a request sent as it is: the path not cleaned, each header
// added (a name may come twice), and the answer returned as it came, a
// redirect included.
func (h *Harness) Send(method, path, key, body string, hdr ...string) Response {
	h.T.Helper()
	req, err := http.NewRequest(method, h.Srv.URL+path, strings.NewReader(body))
	if err != nil {
		h.T.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := NoRedirects.Do(req)
	if err != nil {
		h.T.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return Response{resp.StatusCode, resp.Header, data}
}

var NoRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

type Account struct {
	ID, Key, KeyID string
}

func (h *Harness) Account(credits int64) Account {
	h.T.Helper()
	r := h.Do("POST", "/admin/v1/accounts", AdminToken, map[string]any{"email": "user@example.com", "credits": credits})
	if r.Status != 201 {
		h.T.Fatalf("open account: %d %s", r.Status, r.Body)
	}
	m := r.JSON(h.T)
	return Account{ID: m["account_id"].(string), Key: m["api_key"].(string), KeyID: m["key_id"].(string)}
}

func (h *Harness) Balance(a Account) (int64, int64) {
	h.T.Helper()
	acct, err := h.Node.Reads().Account(a.ID)
	if err != nil {
		h.T.Fatal(err)
	}
	return acct.Balance, int64(acct.Active)
}

func RunTestApp(mode string) map[string]any {
	return map[string]any{"app_slug": TestAppSlug, "input": map[string]any{"mode": mode}}
}

func ColdEmailRun() map[string]any {
	return map[string]any{"app_slug": "cold-email-writer", "input": map[string]any{
		"product_description": "Acme Ledger automates bookkeeping.", "target_role": "Agency founders"}}
}

// Create creates a run and fails the test unless it got 201.
func (h *Harness) Create(a Account, body any) string {
	h.T.Helper()
	r := h.Do("POST", "/api/v1/runs", a.Key, body)
	if r.Status != 201 {
		h.T.Fatalf("create run: %d %s", r.Status, r.Body)
	}
	return r.JSON(h.T)["run_no"].(string)
}

// SSEEvent is one event read off a stream.
type SSEEvent struct {
	ID    uint64
	Event string
	Data  map[string]any
}

// Stream opens a run's event Stream; events and comments arrive on the
// returned channels until the Stream ends (events is then closed).
func (h *Harness) Stream(ctx context.Context, a Account, runNo string, hdr ...string) (<-chan SSEEvent, <-chan string, *http.Response) {
	h.T.Helper()
	path := "/api/v1/runs/" + runNo + "/events"
	if len(hdr) == 1 {
		path += hdr[0]
		hdr = nil
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", h.Srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+a.Key)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.T.Fatal(err)
	}
	events, comments := make(chan SSEEvent, 100), make(chan string, 100)
	go func() {
		defer close(events)
		defer resp.Body.Close()
		_ = ReadSSE(resp.Body, func(ev SSEEvent) { events <- ev }, func(c string) {
			select {
			case comments <- c:
			default:
			}
		})
	}()
	return events, comments, resp
}

// Collect reads a stream to its end (bounded by 20s).
func (h *Harness) Collect(a Account, runNo string, hdr ...string) []SSEEvent {
	h.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	events, _, resp := h.Stream(ctx, a, runNo, hdr...)
	if resp.StatusCode != 200 {
		h.T.Fatalf("stream status %d", resp.StatusCode)
	}
	var out []SSEEvent
	for ev := range events {
		out = append(out, ev)
	}
	if ctx.Err() != nil {
		h.T.Fatalf("stream of %s did not end within 20s; got %+v", runNo, out)
	}
	return out
}

// WaitRun waits until a run reaches a terminal status and returns it.
func (h *Harness) WaitRun(a Account, runNo string) map[string]any {
	h.T.Helper()
	evs := h.Collect(a, runNo)
	if len(evs) == 0 {
		h.T.Fatalf("run %s: empty stream", runNo)
	}
	r := h.Do("GET", "/api/v1/runs/"+runNo, a.Key, nil)
	if r.Status != 200 {
		h.T.Fatalf("get run: %d %s", r.Status, r.Body)
	}
	return r.JSON(h.T)
}

// Pages follows next_cursor through a list endpoint and returns every item.
func (h *Harness) Pages(a Account, path string) []map[string]any {
	h.T.Helper()
	var out []map[string]any
	cursor := ""
	for {
		p := path
		if cursor != "" {
			p += "&cursor=" + cursor
		}
		r := h.Do("GET", p, a.Key, nil)
		if r.Status != 200 {
			h.T.Fatalf("GET %s: %d %s", p, r.Status, r.Body)
		}
		m := r.JSON(h.T)
		for _, e := range m["data"].([]any) {
			out = append(out, e.(map[string]any))
		}
		next, _ := m["next_cursor"].(string)
		if next == "" {
			return out
		}
		cursor = next
	}
}

// ReadSSE parses an event stream, calling event for each event and
// comment (when not nil) for each comment line, until the stream ends.
func ReadSSE(r io.Reader, event func(SSEEvent), comment func(string)) error {
	sc := bufio.NewScanner(r)
	var ev SSEEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.Event != "" {
				event(ev)
			}
			ev = SSEEvent{}
		case strings.HasPrefix(line, ":"):
			if comment != nil {
				comment(line)
			}
		case strings.HasPrefix(line, "id: "):
			ev.ID, _ = strconv.ParseUint(line[4:], 10, 64)
		case strings.HasPrefix(line, "event: "):
			ev.Event = line[7:]
		case strings.HasPrefix(line, "data: "):
			_ = json.Unmarshal([]byte(line[6:]), &ev.Data)
		}
	}
	return sc.Err()
}

// testApp is an App whose runs the test steers through input.mode:
// "ok" completes, "fail" fails (the failure seam), "hold" waits until the
// harness releases held runs, then completes; "hold_fail" waits, then fails.
const TestAppSlug = "test-app"
