package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// JSON modes: how a request asks the model for a JSON object.
const (
	// JSONObject sends response_format {"type":"json_object"} (OpenAI,
	// Ollama, vLLM, llama.cpp).
	JSONObject = "json_object"
	// JSONSchema sends response_format json_schema with the step's output
	// schema, not strict (OpenAI, LM Studio, vLLM).
	JSONSchema = "json_schema"
	// JSONNone sends no response_format: the instructions alone ask for JSON.
	JSONNone = "none"
)

// Config configures the model provider.
type Config struct {
	// BaseURL is the API base, e.g. https://api.openai.com/v1 or
	// http://localhost:11434/v1 for Ollama; requests go to
	// {BaseURL}/chat/completions.
	BaseURL string
	APIKey  string
	Model   string
	// JSONMode is JSONObject (default), JSONSchema or JSONNone.
	JSONMode string
	// MaxAttempts bounds the tries of one completion (default 5).
	MaxAttempts int
	// Backoff is the wait before the second try when the provider gives
	// no Retry-After (default 1s); it doubles on each try, up to 30s.
	Backoff time.Duration
	// NoTemperature leaves the definitions' temperatures out of requests
	// (OpenAI's reasoning models refuse any but the default).
	NoTemperature bool
	// HTTPClient is the client for the provider (default: a client
	// with a 10-minute overall timeout; the run's deadline bounds it).
	HTTPClient *http.Client
}

// Client calls one model.
type Client struct {
	cfg Config
	api openai.Client
}

// New checks cfg and builds a Client.
func New(cfg Config) (*Client, error) {
	if cfg.BaseURL == "" || cfg.Model == "" {
		return nil, errors.New("llm: a base URL and a model are required")
	}
	switch cfg.JSONMode {
	case "":
		cfg.JSONMode = JSONObject
	case JSONObject, JSONSchema, JSONNone:
	default:
		return nil, fmt.Errorf("llm: JSON mode %q: want %s, %s or %s", cfg.JSONMode, JSONObject, JSONSchema, JSONNone)
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 5
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Minute}
	}
	key := cfg.APIKey
	if key == "" {
		key = "none" // local servers ignore it; the header must still parse
	}
	api := openai.NewClient(
		option.WithBaseURL(strings.TrimRight(cfg.BaseURL, "/")+"/"),
		option.WithAPIKey(key),
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithMaxRetries(0), // retries are ours: see Complete
	)
	return &Client{cfg: cfg, api: api}, nil
}

// Model is the configured model's name.
func (c *Client) Model() string { return c.cfg.Model }

// Request is one completion: instructions, the user message (data), and the
// JSON Schema the reply must follow.
type Request struct {
	System string
	User   string
	// SchemaName names the output shape (letters, digits, _ and -).
	SchemaName string
	Schema     json.RawMessage
	// Temperature, when set, is sent as is.
	Temperature *float64
	// Model, when set, is asked for instead of the configured model (a
	// rerun with another model).
	Model string
}

// Reply is a completion's text, with the model that wrote it and the
// tokens it used when the provider reports them.
type Reply struct {
	Text     string
	Model    string
	Usage    *Usage
	Attempts int
}

// Usage is a completion's token count as the provider reported it.
type Usage struct {
	Prompt, Completion, Total int64
}

// Sent is what a request sends: its model and parameters, for the run's
// record (never the key).
type Sent struct {
	Provider    string
	Model       string
	JSONMode    string
	Temperature *float64
}

// Sent says what req would send: the provider's base URL (without any
// user or query part), the model and the parameters.
func (c *Client) Sent(req Request) Sent {
	s := Sent{Provider: redactURL(c.cfg.BaseURL), Model: c.cfg.Model, JSONMode: c.cfg.JSONMode}
	if req.Model != "" {
		s.Model = req.Model
	}
	if req.Temperature != nil && !c.cfg.NoTemperature {
		s.Temperature = req.Temperature
	}
	return s
}

// redactURL is raw without user info, query or fragment.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// Complete streams one completion and returns its text. progress, when not
// nil, is called with the length of the text so far as it grows. 429 and
// 5xx answers and dropped connections are tried again after Retry-After
// (or a doubling backoff) while attempts remain and the wait ends before
// ctx's deadline; other answers fail at once.
func (c *Client) Complete(ctx context.Context, req Request, progress func(chars int)) (Reply, error) {
	params := c.params(req)
	for attempt := 1; ; attempt++ {
		reply, err := c.once(ctx, params, progress)
		reply.Attempts = attempt
		if err == nil {
			if strings.TrimSpace(reply.Text) == "" {
				return reply, &Error{Kind: EmptyReply, Attempts: attempt, Err: errors.New("the model's reply was empty")}
			}
			return reply, nil
		}
		if ctx.Err() != nil {
			return reply, ctx.Err()
		}
		status, wait, retry := c.retryAfter(err, attempt)
		if !retry {
			return reply, &Error{Kind: Rejected, Status: status, Attempts: attempt, Err: err}
		}
		if attempt >= c.cfg.MaxAttempts {
			return reply, &Error{Kind: Unavailable, Status: status, Attempts: attempt, Err: err}
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return reply, &Error{Kind: Unavailable, Status: status, Attempts: attempt,
				Err: fmt.Errorf("%w; the next try (in %s) would pass the run's deadline", err, wait.Round(time.Millisecond))}
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return reply, ctx.Err()
		}
	}
}

func (c *Client) params(req Request) openai.ChatCompletionNewParams {
	model := c.cfg.Model
	if req.Model != "" {
		model = req.Model
	}
	p := openai.ChatCompletionNewParams{
		Model: shared.ChatModel(model),
		// The usage comes in the stream's last chunk (a provider that
		// ignores the option sends none, and the record says so).
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage(req.System),
			openai.UserMessage(req.User),
		},
	}
	if req.Temperature != nil && !c.cfg.NoTemperature {
		p.Temperature = openai.Float(*req.Temperature)
	}
	switch c.cfg.JSONMode {
	case JSONObject:
		p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
	case JSONSchema:
		var schema any
		_ = json.Unmarshal(req.Schema, &schema)
		name := req.SchemaName
		if name == "" {
			name = "output"
		}
		p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: name, Schema: schema, Strict: openai.Bool(false)}}}
	}
	return p
}

// once makes one streamed request.
func (c *Client) once(ctx context.Context, params openai.ChatCompletionNewParams, progress func(int)) (Reply, error) {
	stream := c.api.Chat.Completions.NewStreaming(ctx, params)
	defer stream.Close()
	var text strings.Builder
	var out Reply
	for stream.Next() {
		chunk := stream.Current()
		if chunk.Model != "" {
			out.Model = chunk.Model
		}
		if u := chunk.Usage; u.TotalTokens > 0 || u.PromptTokens > 0 || u.CompletionTokens > 0 {
			out.Usage = &Usage{Prompt: u.PromptTokens, Completion: u.CompletionTokens, Total: u.TotalTokens}
		}
		if len(chunk.Choices) == 0 || chunk.Choices[0].Delta.Content == "" {
			continue
		}
		text.WriteString(chunk.Choices[0].Delta.Content)
		if progress != nil {
			progress(text.Len())
		}
	}
	if err := stream.Err(); err != nil {
		return out, err
	}
	out.Text = text.String()
	return out, nil
}

// retryAfter says whether err is worth another try and how long to wait.
func (c *Client) retryAfter(err error, attempt int) (status int, wait time.Duration, retry bool) {
	backoff := min(c.cfg.Backoff<<(attempt-1), 30*time.Second)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		return 0, backoff, true // the connection failed or dropped mid-stream
	}
	status = apiErr.StatusCode
	if status != http.StatusTooManyRequests && status < 500 {
		return status, 0, false
	}
	if apiErr.Response != nil {
		if d, ok := parseRetryAfter(apiErr.Response.Header, time.Now()); ok {
			return status, d, true
		}
	}
	return status, backoff, true
}

// parseRetryAfter reads retry-after-ms (OpenAI's) or Retry-After, in
// seconds or as an HTTP date.
func parseRetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		var ms float64
		if _, err := fmt.Sscanf(v, "%g", &ms); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	var secs float64
	if _, err := fmt.Sscanf(v, "%g", &secs); err == nil && secs >= 0 {
		return time.Duration(secs * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
