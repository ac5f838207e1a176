package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestEnvelopedAnswersPlainRefusalsAsTheEnvelope(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		h            http.HandlerFunc
		status       int
		code, words  string
		maxMsgLength int
	}{
		{"a refusal", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "malformed payload", 400) }, 400, "invalid_request", "malformed payload", 100},
		{"a server error's words are not shown", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "db password wrong", 500) }, 500, "internal_error", "Internal Server Error", 100},
		{"a long refusal is cut", func(w http.ResponseWriter, r *http.Request) { http.Error(w, strings.Repeat("x", 1<<20), 400) }, 400, "invalid_request", "xxx", maxPlainError},
		{"no words", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(406)
		}, 406, "not_acceptable", "Not Acceptable", 100},
	} {
		rec := httptest.NewRecorder()
		Enveloped(tc.h).ServeHTTP(rec, httptest.NewRequest("POST", "/mcp", nil))
		var env envelope
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || rec.Code != tc.status || string(env.Error.Code) != tc.code ||
			!strings.Contains(env.Error.Message, tc.words) || len(env.Error.Message) > tc.maxMsgLength ||
			rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %q %.200s", tc.name, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
		}
	}
	// A stream and a JSON answer pass through, flushed as they go.
	rec := httptest.NewRecorder()
	Enveloped(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("event: message\n\n"))
		http.NewResponseController(w).Flush()
	})).ServeHTTP(rec, httptest.NewRequest("POST", "/mcp", nil))
	if rec.Code != 200 || !rec.Flushed || rec.Body.String() != "event: message\n\n" {
		t.Errorf("a stream: %d flushed %v %q", rec.Code, rec.Flushed, rec.Body)
	}
	rec = httptest.NewRecorder()
	Enveloped(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","error":{}}`))
	})).ServeHTTP(rec, httptest.NewRequest("POST", "/mcp", nil))
	if rec.Code != 400 || rec.Body.String() != `{"jsonrpc":"2.0","error":{}}` {
		t.Errorf("a JSON refusal: %d %q", rec.Code, rec.Body)
	}
}
