// Package llmtest is a fake model provider for tests: an httptest server
// that speaks the OpenAI Chat Completions wire format, streamed chunks
// included, answers from a script, and records every request it gets.
package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Reply is one scripted answer.
type Reply struct {
	// Status, when not 0 or 200, answers with an error of that status.
	Status int
	// Header is added to the answer (Retry-After, say).
	Header http.Header
	// Text is the assistant's reply, streamed in Chunks pieces (default 8)
	// with ChunkDelay between them.
	Text       string
	Chunks     int
	ChunkDelay time.Duration
}

// Message is one message of a received request.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Received is one request the server got.
type Received struct {
	Model          string          `json:"model"`
	Messages       []Message       `json:"messages"`
	Stream         bool            `json:"stream"`
	ResponseFormat json.RawMessage `json:"response_format"`
	Temperature    *float64        `json:"temperature"`
	StreamOptions  *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Header http.Header `json:"-"`
}

// System is the request's system message.
func (r Received) System() string { return r.role("system") }

// User is the request's user message.
func (r Received) User() string { return r.role("user") }

func (r Received) role(role string) string {
	var parts []string
	for _, m := range r.Messages {
		if m.Role == role {
			parts = append(parts, m.Content)
		}
	}
	return strings.Join(parts, "\n")
}

// Server is the fake provider. Its base URL for clients is BaseURL().
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	script   []Reply
	received []Received
	// Answer makes the reply when the script is empty (default: "{}").
	Answer func(Received) Reply
}

// New starts a fake provider on loopback.
func New() *Server {
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// BaseURL is what OPENAI_BASE_URL should be.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Script queues replies, answered in order before Answer is used.
func (s *Server) Script(r ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, r...)
}

// Received returns the requests so far.
func (s *Server) Received() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.received...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		writeError(w, http.StatusNotFound, "no such endpoint: "+r.URL.Path)
		return
	}
	var req Received
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "request is not JSON: "+err.Error())
		return
	}
	req.Header = r.Header.Clone()
	s.mu.Lock()
	s.received = append(s.received, req)
	var rep Reply
	switch {
	case len(s.script) > 0:
		rep, s.script = s.script[0], s.script[1:]
	case s.Answer != nil:
		answer := s.Answer
		s.mu.Unlock()
		rep = answer(req)
		s.mu.Lock()
	default:
		rep = Reply{Text: "{}"}
	}
	s.mu.Unlock()
	for k, vs := range rep.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if rep.Status != 0 && rep.Status != http.StatusOK {
		writeError(w, rep.Status, http.StatusText(rep.Status))
		return
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion", "created": time.Now().Unix(),
			"model": req.Model, "choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": rep.Text}}}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	send := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": time.Now().Unix(),
			"model": req.Model, "choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	for i, piece := range split(rep.Text, rep.Chunks) {
		if i > 0 && rep.ChunkDelay > 0 {
			select { // a provider stops writing when its client hangs up
			case <-time.After(rep.ChunkDelay):
			case <-r.Context().Done():
				return
			}
		}
		delta := map[string]any{"content": piece}
		if i == 0 {
			delta["role"] = "assistant"
		}
		send(delta, nil)
	}
	send(map[string]any{}, "stop")
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		// OpenAI's last chunk: no choices, the usage (a count of words
		// stands in for tokens here).
		prompt, completion := 0, len(strings.Fields(rep.Text))
		for _, m := range req.Messages {
			prompt += len(strings.Fields(m.Content))
		}
		b, _ := json.Marshal(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": time.Now().Unix(),
			"model": req.Model, "choices": []any{}, "usage": map[string]any{"prompt_tokens": prompt, "completion_tokens": completion,
				"total_tokens": prompt + completion}})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// split cuts s into n pieces of about equal size (by runes).
func split(s string, n int) []string {
	if n <= 0 {
		n = 8
	}
	r := []rune(s)
	size := max((len(r)+n-1)/n, 1)
	var out []string
	for i := 0; i < len(r); i += size {
		out = append(out, string(r[i:min(i+size, len(r))]))
	}
	return out
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "fake_error", "code": status}})
}
