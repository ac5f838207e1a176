// Package llmtest is a fake model provider for tests: an httptest server
// that speaks the OpenAI Chat Completions wire format, streamed chunks
// included, answers from a script, and records every request it gets. A
// Profile makes it differ on the wire as one provider does (profiles.go).
package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
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
	// Refusal, when set, is the model declining (strict mode's refusal
	// member) instead of Text.
	Refusal string
	// Cut ends a streamed reply after its text, with no finish reason,
	// usage or [DONE]: a connection dropped mid-reply.
	Cut bool
	// Body, with a Status, is the error answer's body as is (another
	// provider's shape, or not JSON), of ContentType.
	Body        string
	ContentType string
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
	// Path and Query are where the request was sent.
	Path  string     `json:"-"`
	Query url.Values `json:"-"`
}

// Format is the response_format type asked for ("" for none).
func (r Received) Format() string {
	var rf struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(r.ResponseFormat, &rf)
	return rf.Type
}

// JSONSchema is the response_format's json_schema member: its name,
// whether it is strict, and the schema.
func (r Received) JSONSchema() (js struct {
	Name   string          `json:"name"`
	Strict bool            `json:"strict"`
	Schema json.RawMessage `json:"schema"`
}) {
	var rf struct {
		JSONSchema json.RawMessage `json:"json_schema"`
	}
	_ = json.Unmarshal(r.ResponseFormat, &rf)
	_ = json.Unmarshal(rf.JSONSchema, &js)
	return js
}

// StrictSchema is the schema of a strict json_schema request, and
// whether the request was one.
func (r Received) StrictSchema() (json.RawMessage, bool) {
	js := r.JSONSchema()
	return js.Schema, js.Strict && r.Format() == "json_schema"
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
	// Profile is the provider it plays (OpenAI's by default).
	Profile  Profile
	mu       sync.Mutex
	script   []Reply
	received []Received
	// Answer makes the reply when the script is empty (default: "{}").
	Answer func(Received) Reply
}

// New starts a fake provider on loopback, playing OpenAI.
func New() *Server { return NewProvider(OpenAI) }

// NewProvider starts a fake provider on loopback, playing p.
func NewProvider(p Profile) *Server {
	s := &Server{Profile: p}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// BaseURL is what OPENAI_BASE_URL should be: the API base (for Azure,
// the resource's endpoint).
func (s *Server) BaseURL() string {
	switch {
	case s.Profile.Azure:
		return s.URL
	case s.Profile.Name == OpenRouter.Name:
		return s.URL + "/api/v1"
	}
	return s.URL + "/v1"
}

// APIVersion is the api-version an Azure profile is addressed with.
const APIVersion = "2024-10-21"

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
	if msg, status := s.addressed(r); status != 0 {
		writeError(w, status, openAIError(msg, "invalid_request_error", ""))
		return
	}
	var req Received
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, openAIError("request is not JSON: "+err.Error(), "invalid_request_error", ""))
		return
	}
	req.Header, req.Path, req.Query = r.Header.Clone(), r.URL.Path, r.URL.Query()
	s.mu.Lock()
	s.received = append(s.received, req)
	p := s.Profile
	s.mu.Unlock()
	if status, body := p.refusal(req); status != 0 {
		writeError(w, status, body) // refused before the script is read
		return
	}
	rep := s.next(req)
	for k, vs := range rep.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if rep.Body != "" {
		ctype := rep.ContentType
		if ctype == "" {
			ctype = "application/json"
		}
		w.Header().Set("Content-Type", ctype)
		w.WriteHeader(max(rep.Status, http.StatusOK))
		fmt.Fprint(w, rep.Body)
		return
	}
	if rep.Status != 0 && rep.Status != http.StatusOK {
		if ra := rep.Header.Get("Retry-After"); ra != "" && p.RetryAfterMs && rep.Header.Get("Retry-After-Ms") == "" {
			var secs float64
			if _, err := fmt.Sscanf(ra, "%g", &secs); err == nil {
				w.Header().Set("Retry-After-Ms", fmt.Sprint(int(secs*1000)))
			}
		}
		writeError(w, rep.Status, openAIError(http.StatusText(rep.Status), "fake_error", ""))
		return
	}
	usage := usageOf(req, rep)
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		msg := map[string]any{"role": "assistant", "content": rep.Text, "refusal": nil}
		if rep.Refusal != "" {
			msg["content"], msg["refusal"] = nil, rep.Refusal
		}
		body := map[string]any{"id": "chatcmpl-fake", "object": "chat.completion", "created": time.Now().Unix(),
			"model": req.Model, "choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": msg}}}
		if p.Usage != UsageNever {
			body["usage"] = usage
		}
		_ = json.NewEncoder(w).Encode(body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	write := func(line string) {
		fmt.Fprint(w, line)
		if flusher != nil {
			flusher.Flush()
		}
	}
	chunk := func(choices []any, extra map[string]any) {
		m := map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": time.Now().Unix(),
			"model": req.Model, "choices": choices}
		for k, v := range extra {
			m[k] = v
		}
		b, _ := json.Marshal(m)
		write("data: " + string(b) + "\n\n")
	}
	send := func(delta map[string]any, finish any, extra map[string]any) {
		chunk([]any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}, extra)
	}
	if p.FilterChunk { // Azure: the prompt's filter results first, no choices, no model
		b, _ := json.Marshal(map[string]any{"id": "", "object": "", "created": 0, "model": "", "choices": []any{},
			"prompt_filter_results": []any{map[string]any{"prompt_index": 0, "content_filter_results": map[string]any{}}}})
		write("data: " + string(b) + "\n\n")
	}
	if rep.Refusal != "" {
		send(map[string]any{"role": "assistant", "refusal": rep.Refusal}, nil, nil)
	}
	for i, piece := range split(rep.Text, rep.Chunks) {
		if i > 0 && rep.ChunkDelay > 0 {
			select { // a provider stops writing when its client hangs up
			case <-time.After(rep.ChunkDelay):
			case <-r.Context().Done():
				return
			}
		}
		if p.Comments {
			write(": OPENROUTER PROCESSING\n\n")
		}
		delta := map[string]any{"content": piece}
		if i == 0 {
			delta["role"] = "assistant"
		}
		send(delta, nil, nil)
	}
	if rep.Cut {
		return // the handler ends: the stream stops mid-reply
	}
	asked := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	switch {
	case p.Usage == UsageAlways:
		send(map[string]any{}, "stop", map[string]any{"usage": usage}) // on the finish chunk
	case p.Usage == UsageWhenAsked && asked:
		send(map[string]any{}, "stop", nil)
		chunk([]any{}, map[string]any{"usage": usage}) // OpenAI's last chunk: no choices, the usage
	default:
		send(map[string]any{}, "stop", nil)
	}
	write("data: [DONE]\n\n")
}

// addressed checks the request is where and how the profile's server
// takes it: a message and status when not.
func (s *Server) addressed(r *http.Request) (string, int) {
	if r.Method != http.MethodPost {
		return "method not allowed", http.StatusMethodNotAllowed
	}
	s.mu.Lock()
	p := s.Profile
	s.mu.Unlock()
	if !p.Azure {
		if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			return "no such endpoint: " + r.URL.Path, http.StatusNotFound
		}
		return "", 0
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/openai/deployments/")
	if deployment, tail, _ := strings.Cut(rest, "/"); !ok || deployment == "" || tail != "chat/completions" {
		return "Resource not found: " + r.URL.Path, http.StatusNotFound
	}
	if r.URL.Query().Get("api-version") == "" {
		return "Missing API version", http.StatusNotFound
	}
	if r.Header.Get("Api-Key") == "" {
		return "Access denied due to invalid subscription key", http.StatusUnauthorized
	}
	return "", 0
}

// next is the reply to req: the script's next, else Answer's.
func (s *Server) next(req Received) Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case len(s.script) > 0:
		var rep Reply
		rep, s.script = s.script[0], s.script[1:]
		return rep
	case s.Answer != nil:
		answer := s.Answer
		s.mu.Unlock()
		defer s.mu.Lock()
		return answer(req)
	}
	return Reply{Text: "{}"}
}

// usageOf is a reply's usage (a count of words stands in for tokens).
func usageOf(req Received, rep Reply) map[string]any {
	prompt, completion := 0, len(strings.Fields(rep.Text))
	for _, m := range req.Messages {
		prompt += len(strings.Fields(m.Content))
	}
	return map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
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

func writeError(w http.ResponseWriter, status int, body map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
