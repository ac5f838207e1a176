package edge

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A surface is known to the edge by registration alone: the first one
// that owns a request serves it, with its own body limit, and the edge's
// refusals are shown the surface's way. (The edge knew the node's paths:
// a new surface meant editing it.)
func TestASurfaceIsServedAsItRegistered(t *testing.T) {
	t.Parallel()
	var refused []Refusal
	served := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			w.Header().Set("X-Surface", name)
			w.Header().Set("X-Method", r.Method)
			_, _ = w.Write([]byte(name + ":" + string(body)))
		})
	}
	refuse := func(name string) func(http.ResponseWriter, *http.Request, Refusal) {
		return func(w http.ResponseWriter, r *http.Request, f Refusal) {
			refused = append(refused, f)
			w.Header().Set("X-Surface", name)
			w.WriteHeader(f.Status)
		}
	}
	onRefused := 0
	e := New(Config{OnRefused: func(*http.Request) { onRefused++ }})
	e.Register(Surface{Name: "small", Owns: func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/small/") },
		Handler: served("small"), BodyLimit: func(*http.Request) int64 { return 8 }, Refuse: refuse("small")})
	e.Register(Surface{Name: "long", Owns: func(r *http.Request) bool { return r.URL.Path == "/long" },
		Handler: served("long"), Long: true, Refuse: refuse("long")})
	e.Register(Surface{Name: "rest", Handler: served("rest"), Refuse: refuse("rest")})
	srv := httptest.NewServer(e)
	defer srv.Close()
	send := func(method, path, body string, hdr ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Add(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.ReadAll(resp.Body)
		return resp
	}
	for _, c := range []struct {
		method, path, body string
		hdr                []string
		status             int
		surface            string
		reason             Reason
	}{
		{"POST", "/small/x", "12345678", nil, 200, "small", ""},
		{"POST", "/small/x", "123456789", nil, 400, "small", ReasonTooLarge},
		{"POST", "/other", "123456789", nil, 200, "rest", ""},
		{"GET", "/long", "", nil, 200, "long", ""},
		{"POST", "/long", "x", nil, 400, "long", ReasonNoBody},
		{"POST", "/other", "x", []string{"Content-Type", "a/b", "Content-Type", "c/d"}, 400, "rest", ReasonContentTypes},
		{"POST", "/other", "x", []string{"Content-Type", "multipart/form-data; boundary=x"}, 400, "rest", ReasonMultipart},
	} {
		before := len(refused)
		resp := send(c.method, c.path, c.body, c.hdr...)
		if resp.StatusCode != c.status || resp.Header.Get("X-Surface") != c.surface {
			t.Errorf("%s %s: %d from %q, want %d from %q", c.method, c.path, resp.StatusCode, resp.Header.Get("X-Surface"), c.status, c.surface)
		}
		if c.reason != "" && (len(refused) != before+1 || refused[before].Reason != c.reason || !resp.Close) {
			t.Errorf("%s %s: refusals %v, closed %v; want one %s, and the connection closed", c.method, c.path, refused[before:], resp.Close, c.reason)
		}
	}
	if onRefused != 4 {
		t.Errorf("OnRefused told of %d refusals, want 4", onRefused)
	}
	if resp := send("HEAD", "/other", ""); resp.StatusCode != 200 || resp.Header.Get("X-Method") != "GET" {
		t.Errorf("a HEAD: %d, the surface saw %q; want the GET it asks about", resp.StatusCode, resp.Header.Get("X-Method"))
	}
}

// A route that reads a body before it knows its sender has it read by the
// edge, within its budget: past it, 503 at once.
func TestABodyFromAnUnknownSenderIsReadWithinItsBudget(t *testing.T) {
	t.Parallel()
	b := NewBudget(BudgetLimits{Total: 10})
	e := New(Config{})
	e.Register(Surface{Name: "forms", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		_, _ = w.Write(data)
	}), ReadsUnknown: func(*http.Request) *Budget { return b },
		Refuse: func(w http.ResponseWriter, r *http.Request, f Refusal) { w.WriteHeader(f.Status) }})
	srv := httptest.NewServer(e)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/signin", "application/x-www-form-urlencoded", strings.NewReader("email=a"))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(got) != "email=a" {
		t.Fatalf("a form within the budget: %d %q", resp.StatusCode, got)
	}
	if !b.take("elsewhere", 10) {
		t.Fatal("what the form took was not given back")
	}
	resp, err = http.Post(srv.URL+"/signin", "application/x-www-form-urlencoded", strings.NewReader("email=a"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a form past the budget: %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}
