package llm

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"
)

// Providers: how requests are addressed and authenticated.
const (
	// ProviderOpenAI is any server of the OpenAI Chat Completions wire
	// format (OpenAI, OpenRouter, Ollama's /v1, vLLM, llama.cpp's server,
	// LM Studio): {BaseURL}/chat/completions with a bearer key.
	ProviderOpenAI = "openai"
	// ProviderAzure is Azure OpenAI: BaseURL is the resource's endpoint,
	// the model names the deployment
	// ({endpoint}/openai/deployments/{model}/chat/completions), every
	// request carries api-version, and the key goes in the api-key
	// header.
	ProviderAzure = "azure"
)

// Config configures the model provider.
type Config struct {
	// BaseURL is the API base, e.g. https://api.openai.com/v1 or
	// http://localhost:11434/v1 for Ollama; requests go to
	// {BaseURL}/chat/completions. For Azure, the resource's endpoint.
	BaseURL string
	APIKey  string
	Model   string
	// Provider is ProviderOpenAI (default) or ProviderAzure.
	Provider string
	// APIVersion is Azure OpenAI's api-version (required with it).
	APIVersion string
	// JSONMode is JSONAuto (default), JSONSchema, JSONObject or
	// JSONPrompt (mode.go).
	JSONMode string
	// NoStream asks for whole replies instead of streamed ones (no
	// progress while the model writes).
	NoStream bool
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
	// Logger hears each fall back from a refused JSON mode or option
	// (default: none).
	Logger *slog.Logger
}

// Client calls one model.
type Client struct {
	cfg Config
	// api is the provider's openai.Client, held as any: a field of
	// openai-go's type made every package that imports llm compile
	// openai-go's generic code again (about 2,500 functions, 5 s of a race
	// build, in each of them). chat reads it.
	api any
	// modes is the JSON modes still to try, the first in use (mode.go);
	// auto drops one when the provider refuses it, for good.
	modes atomic.Pointer[[]string]
	// noUsageOption is set once the provider refused stream_options.
	noUsageOption atomic.Bool
}

// New checks cfg and builds a Client.
func New(cfg Config) (*Client, error) {
	if cfg.BaseURL == "" || cfg.Model == "" {
		return nil, errors.New("llm: a base URL and a model are required")
	}
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	modes, _ := modeChain(cfg.JSONMode)
	cfg.JSONMode = modes[0]
	if len(modes) > 1 {
		cfg.JSONMode = JSONAuto
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
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	key := cfg.APIKey
	if key == "" {
		key = "none" // local servers ignore it; the header must still parse
	}
	opts := []option.RequestOption{
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithMaxRetries(0), // retries are ours: see Complete
		option.WithMiddleware(normalize),
	}
	switch cfg.Provider {
	case "", ProviderOpenAI:
		cfg.Provider = ProviderOpenAI
		opts = append(opts, option.WithBaseURL(strings.TrimRight(cfg.BaseURL, "/")+"/"), option.WithAPIKey(key))
	case ProviderAzure:
		// openai-go's azure package: the deployment path, api-version and
		// api-key header, kept by OpenAI rather than by us.
		opts = append(opts, azure.WithEndpoint(strings.TrimRight(cfg.BaseURL, "/"), cfg.APIVersion), azure.WithAPIKey(key))
		if u, err := url.Parse(cfg.BaseURL); err == nil && u.Scheme == "http" {
			opts = append(opts, azure.WithUnsafeAllowHTTP()) // the package allows it on loopback only
		}
	}
	api := openai.NewClient(opts...)
	c := &Client{cfg: cfg, api: &api}
	c.modes.Store(&modes)
	return c, nil
}

// Model is the configured model's name.
func (c *Client) Model() string { return c.cfg.Model }

// Watch is what a caller hears while a completion runs; either may be nil.
type Watch struct {
	// Writing is called with the length of the reply so far as it grows.
	Writing func(chars int)
	// Waiting is called before each wait for another try.
	Waiting func(Wait)
}

// Wait is one wait before another try of a completion.
type Wait struct {
	// Attempt is the try that follows the wait (2 or more), of Of.
	Attempt, Of int
	// In is how long the wait is.
	In time.Duration
	// Status is the provider's answer that caused it (0: no answer, the
	// connection failed).
	Status int
}

// Complete makes one completion and returns its text. 429 and 5xx
// answers and dropped connections are tried again after Retry-After (or
// a doubling backoff) while attempts remain and the wait ends before
// ctx's deadline; other answers fail at once. In JSONAuto mode a request
// whose JSON mode the provider refuses is made again in the next mode,
// which later requests then use.
func (c *Client) Complete(ctx context.Context, req Request, watch Watch) (Reply, error) {
	attempt := 1
	for fallbacks := 0; ; {
		mode := c.mode()
		reply, err := c.once(ctx, c.params(req, mode), watch.Writing)
		reply.Attempts, reply.JSONMode = attempt, mode
		if err == nil {
			switch {
			case strings.TrimSpace(reply.Text) == "" && reply.Refusal != "":
				return reply, &Error{Kind: Declined, Attempts: attempt, Err: errors.New(reply.Refusal)}
			case strings.TrimSpace(reply.Text) == "":
				return reply, &Error{Kind: EmptyReply, Attempts: attempt, Err: errors.New("the reply was empty")}
			}
			return reply, nil
		}
		if ctx.Err() != nil {
			return reply, ctx.Err()
		}
		if fallbacks < maxFallbacks && c.fallBack(err, mode) {
			fallbacks++
			continue // the same attempt, asked the way the provider takes
		}
		status, wait, retry := c.retryAfter(err, attempt)
		if !retry {
			return reply, &Error{Kind: Rejected, Status: status, Attempts: attempt, Err: err}
		}
		if attempt >= c.cfg.MaxAttempts {
			return reply, &Error{Kind: Unavailable, Status: status, Attempts: attempt, Err: err}
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return reply, &Error{Kind: Unavailable, Status: status, Attempts: attempt, PastDeadline: wait, Err: err}
		}
		attempt++
		if watch.Waiting != nil {
			watch.Waiting(Wait{Attempt: attempt, Of: c.cfg.MaxAttempts, In: wait, Status: status})
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

// redactURL is raw without user info, query or fragment.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}
