package httpapi_test

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"
)

// Every GET answers HEAD too (RFC 9110 §9.1: a general-purpose server
// must support both): the same status and headers, no body. Monitors and
// link checkers send HEAD; it was 405 on every route.
func TestEveryGETAnswersHEAD(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	runNo := h.Create(a, RunTestApp("ok"))
	h.WaitRun(a, runNo)
	for _, tc := range []struct{ path, key string }{
		{"/healthz", ""}, {"/api/v1/openapi.json", ""}, {"/api/v1/runs/" + runNo, a.Key}, {"/api/v1/runs", a.Key},
		{"/", ""}, {"/apps", ""}, {"/static/style.css", ""},
	} {
		get := h.Do("GET", tc.path, tc.key, nil)
		head := h.Do("HEAD", tc.path, tc.key, nil)
		if head.Status != get.Status || get.Status != 200 || len(head.Body) != 0 ||
			head.Header.Get("Content-Type") != get.Header.Get("Content-Type") {
			t.Errorf("HEAD %s: %d %q %d bytes; GET: %d %q", tc.path, head.Status, head.Header.Get("Content-Type"), len(head.Body),
				get.Status, get.Header.Get("Content-Type"))
		}
		if cl := head.Header.Get("Content-Length"); cl != "" && cl != get.Header.Get("Content-Length") {
			t.Errorf("HEAD %s: Content-Length %s, GET's %s", tc.path, cl, get.Header.Get("Content-Length"))
		}
	}
	if r := h.Do("HEAD", "/api/v1/runs/"+runNo, "", nil); r.Status != 401 {
		t.Errorf("HEAD of a run without a key: %d, want 401", r.Status)
	}

	// An event stream's HEAD is its headers, at once, and no stream: the
	// connection carries the next request's answer right after them.
	conn, err := net.Dial("tcp", HostAddr(h))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	req, _ := http.NewRequest("HEAD", "http://x/api/v1/runs/"+runNo+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+a.Key)
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("HEAD of an event stream: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	next, _ := http.NewRequest("GET", "http://x/healthz", nil)
	if err := next.Write(conn); err != nil {
		t.Fatal(err)
	}
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("after an event stream's HEAD the connection read %q (%v), want the next answer", line, err)
	}
}

// A 405 says which methods the path takes (RFC 9110 §15.5.6: it must), on
// the API, the website and MCP.
func TestA405SaysWhichMethodsThePathTakes(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	for _, tc := range []struct{ method, path, allow string }{
		{"PUT", "/api/v1/runs", "GET, HEAD, POST"},
		{"DELETE", "/healthz", "GET, HEAD"},
		{"PATCH", "/api/v1/runs/run_aaaaaaaaaaaaaaaaaaaaaaaaaa", "GET, HEAD"},
		{"PUT", "/apps", "GET, HEAD"},
		{"PUT", "/signin", "GET, HEAD, POST"},
		{"GET", "/mcp", "POST"},
	} {
		r := h.Do(tc.method, tc.path, a.Key, nil)
		if r.Status != 405 || r.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d Allow %q, want 405 Allow %q", tc.method, tc.path, r.Status, r.Header.Get("Allow"), tc.allow)
		}
	}
}
