package main

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

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/httpapi"
	"github.com/apprun/apprun/node"
	"golang.org/x/crypto/bcrypt"
)

const testAdminToken = "test-admin-token-0123456789"

// testApp is an App whose runs the test steers through input.mode:
// "ok" completes, "fail" fails (the failure seam), "hold" waits until the
// harness releases held runs, then completes; "hold_fail" waits, then fails.
const testAppSlug = "test-app"

type harness struct {
	t       testing.TB
	dir     string
	cfg     node.Config
	node    *node.Node
	srv     *httptest.Server
	release chan struct{}
	relOnce *sync.Once
	faultMu sync.Mutex
	faults  []string // contract faults (contract_test.go)
}

type option func(*node.Config)

func withLimits(l engine.Limits) option { return func(c *node.Config) { c.Limits = l } }
func withAppTimeout(slug string, d time.Duration) option {
	return func(c *node.Config) { c.AppTimeouts = map[string]time.Duration{slug: d} }
}
func withRetention(slug string, d time.Duration) option {
	return func(c *node.Config) {
		c.AppRetention = map[string]time.Duration{slug: d}
		c.RetentionSweep = 20 * time.Millisecond
	}
}
func withStreamsPerKey(n int) option { return func(c *node.Config) { c.StreamsPerKey = n } }
func withRequestTimeout(d time.Duration) option {
	return func(c *node.Config) { c.RequestTimeout = d }
}
func withLogger(l *slog.Logger) option     { return func(c *node.Config) { c.Logger = l } }
func withWriteWait(d time.Duration) option { return func(c *node.Config) { c.WriteWait = d } }

// withDataDir runs the node on dir rather than a new temporary directory.
func withDataDir(dir string) option { return func(c *node.Config) { c.DataDir = dir } }
func withHeartbeat(d time.Duration) option {
	return func(c *node.Config) { c.Heartbeat = d }
}

// noLimits leaves rate and concurrency limits off so a test pins only what it means to.
var noLimits = engine.Limits{}

func start(t testing.TB, opts ...option) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), release: make(chan struct{}), relOnce: &sync.Once{}}
	// Passwords at bcrypt's least cost: under the race detector one hash
	// at the default cost takes most of a second, and the website's tests
	// sign up and in often.
	h.cfg = node.Config{Addr: "127.0.0.1:0", AdminToken: testAdminToken, Heartbeat: 15 * time.Second, PasswordCost: bcrypt.MinCost,
		Limits:   engine.Limits{CreatePerMinute: 10, ReadsPerMinute: 120, OwnerActiveRuns: 3, PlatformActiveRuns: 12},
		Refusals: httpapi.RefusalLimits{PerKeyPerMinute: 60, PerAddrPerMinute: 120}, Conns: httpapi.ConnLimits{PerAddr: 128}}
	for _, o := range opts {
		o(&h.cfg)
	}
	if h.cfg.Logger == nil {
		h.cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if h.cfg.DataDir == "" {
		h.cfg.DataDir = h.dir
	}
	h.dir = h.cfg.DataDir
	h.boot()
	t.Cleanup(h.stop)
	return h
}

func (h *harness) apps() []engine.App {
	release := h.release
	test := engine.App{Slug: testAppSlug, Name: "Test App", Description: "steered by tests", Price: 10,
		Timeout: time.Minute, Runnable: true, AcceptsBrandContext: true,
		InputSchema: []byte(`{"type":"object","properties":{"mode":{"enum":["ok","fail","hold","hold_fail"]}},"required":["mode"]}`),
		Executor: engine.ExecutorFunc(func(ctx context.Context, job engine.Job, progress func(engine.Step)) (engine.Result, error) {
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
	shipped, err := h.cfg.LoadApps()
	if err != nil {
		h.t.Fatal(err)
	}
	return append(shipped, test, unpriced)
}

func (h *harness) boot() {
	h.t.Helper()
	h.cfg.Apps = h.apps()
	n, err := node.New(h.cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		h.t.Fatal(err)
	}
	h.node = n
	h.srv = httptest.NewServer(h.checked(n.Handler()))
	h.waitReady()
}

func (h *harness) waitReady() {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !h.node.Reads().Ready() {
		if time.Now().After(deadline) {
			h.t.Fatal("node not ready within 20s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// releaseHeld lets every held run finish.
func (h *harness) releaseHeld() { h.relOnce.Do(func() { close(h.release) }) }

func (h *harness) stop() {
	h.releaseHeld()
	h.halt()
}

// halt stops the node without releasing held runs: the engine's stop
// cancels them, and they are still in flight for the next node. (A
// release first raced the stop: a released run could complete on the
// node that was stopping.)
func (h *harness) halt() {
	if h.srv != nil {
		h.srv.CloseClientConnections()
		h.srv.Close()
		h.srv = nil
	}
	if h.node != nil {
		h.node.Stop()
		h.node = nil
	}
	h.reportFaults()
}

// restart stops the node and starts a new one on the same data directory.
func (h *harness) restart() {
	h.halt()
	h.release, h.relOnce = make(chan struct{}), &sync.Once{}
	h.boot()
}

type response struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r response) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("response %d is not a JSON object: %q", r.Status, r.Body)
	}
	return m
}

// errorCode checks the error envelope and returns its code.
func (r response) errorCode(t testing.TB) string {
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

// raw is a request body sent as it is, with its own Content-Type.
type raw struct{ body, contentType string }

func (h *harness) do(method, path, key string, body any, hdr ...string) response {
	h.t.Helper()
	var rd io.Reader
	ctype := "application/json"
	switch b := body.(type) {
	case nil:
	case raw:
		rd, ctype = strings.NewReader(b.body), b.contentType
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, _ := json.Marshal(b)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, h.srv.URL+path, rd)
	if err != nil {
		h.t.Fatal(err)
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
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, data}
}

// send is a request sent as it is: the path not cleaned, each header
// added (a name may come twice), and the answer returned as it came, a
// redirect included.
func (h *harness) send(method, path, key, body string, hdr ...string) response {
	h.t.Helper()
	req, err := http.NewRequest(method, h.srv.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, data}
}

var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

type account struct {
	ID, Key, KeyID string
}

func (h *harness) account(credits int64) account {
	h.t.Helper()
	r := h.do("POST", "/admin/v1/accounts", testAdminToken, map[string]any{"email": "user@example.com", "credits": credits})
	if r.Status != 201 {
		h.t.Fatalf("open account: %d %s", r.Status, r.Body)
	}
	m := r.json(h.t)
	return account{ID: m["account_id"].(string), Key: m["api_key"].(string), KeyID: m["key_id"].(string)}
}

func (h *harness) balance(a account) (int64, int64) {
	h.t.Helper()
	acct, err := h.node.Reads().Account(a.ID)
	if err != nil {
		h.t.Fatal(err)
	}
	return acct.Balance, int64(acct.Active)
}

func testRun(mode string) map[string]any {
	return map[string]any{"app_slug": testAppSlug, "input": map[string]any{"mode": mode}}
}

func coldEmailRun() map[string]any {
	return map[string]any{"app_slug": "cold-email-writer", "input": map[string]any{
		"product_description": "Acme Ledger automates bookkeeping.", "target_role": "Agency founders"}}
}

// create creates a run and fails the test unless it got 201.
func (h *harness) create(a account, body any) string {
	h.t.Helper()
	r := h.do("POST", "/api/v1/runs", a.Key, body)
	if r.Status != 201 {
		h.t.Fatalf("create run: %d %s", r.Status, r.Body)
	}
	return r.json(h.t)["run_no"].(string)
}

// sseEvent is one event read off a stream.
type sseEvent struct {
	ID    uint64
	Event string
	Data  map[string]any
}

// stream opens a run's event stream; events and comments arrive on the
// returned channels until the stream ends (events is then closed).
func (h *harness) stream(ctx context.Context, a account, runNo string, hdr ...string) (<-chan sseEvent, <-chan string, *http.Response) {
	h.t.Helper()
	path := "/api/v1/runs/" + runNo + "/events"
	if len(hdr) == 1 {
		path += hdr[0]
		hdr = nil
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", h.srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+a.Key)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	events, comments := make(chan sseEvent, 100), make(chan string, 100)
	go func() {
		defer close(events)
		defer resp.Body.Close()
		_ = readSSE(resp.Body, func(ev sseEvent) { events <- ev }, func(c string) {
			select {
			case comments <- c:
			default:
			}
		})
	}()
	return events, comments, resp
}

// collect reads a stream to its end (bounded by 20s).
func (h *harness) collect(a account, runNo string, hdr ...string) []sseEvent {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	events, _, resp := h.stream(ctx, a, runNo, hdr...)
	if resp.StatusCode != 200 {
		h.t.Fatalf("stream status %d", resp.StatusCode)
	}
	var out []sseEvent
	for ev := range events {
		out = append(out, ev)
	}
	if ctx.Err() != nil {
		h.t.Fatalf("stream of %s did not end within 20s; got %+v", runNo, out)
	}
	return out
}

// waitRun waits until a run reaches a terminal status and returns it.
func (h *harness) waitRun(a account, runNo string) map[string]any {
	h.t.Helper()
	evs := h.collect(a, runNo)
	if len(evs) == 0 {
		h.t.Fatalf("run %s: empty stream", runNo)
	}
	r := h.do("GET", "/api/v1/runs/"+runNo, a.Key, nil)
	if r.Status != 200 {
		h.t.Fatalf("get run: %d %s", r.Status, r.Body)
	}
	return r.json(h.t)
}

// pages follows next_cursor through a list endpoint and returns every item.
func (h *harness) pages(a account, path string) []map[string]any {
	h.t.Helper()
	var out []map[string]any
	cursor := ""
	for {
		p := path
		if cursor != "" {
			p += "&cursor=" + cursor
		}
		r := h.do("GET", p, a.Key, nil)
		if r.Status != 200 {
			h.t.Fatalf("GET %s: %d %s", p, r.Status, r.Body)
		}
		m := r.json(h.t)
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

// readSSE parses an event stream, calling event for each event and
// comment (when not nil) for each comment line, until the stream ends.
func readSSE(r io.Reader, event func(sseEvent), comment func(string)) error {
	sc := bufio.NewScanner(r)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.Event != "" {
				event(ev)
			}
			ev = sseEvent{}
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
