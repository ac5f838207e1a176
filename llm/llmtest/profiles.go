package llmtest

import "net/http"

// Profile is how one provider's server differs on the wire, as its
// documentation says. The zero Profile is OpenAI's.
type Profile struct {
	Name string
	// Azure addresses a deployment
	// (/openai/deployments/{deployment}/chat/completions?api-version=…)
	// and takes the key in the api-key header.
	Azure bool
	// Strict says what response_format json_schema gets.
	Strict StrictSupport
	// NoJSONObject refuses response_format json_object.
	NoJSONObject bool
	// Usage says when the stream's usage is sent.
	Usage UsageStyle
	// RefusesStreamOptions answers 400 to stream_options (Azure OpenAI
	// before api-version 2024-09-01-preview).
	RefusesStreamOptions bool
	// Comments sends SSE comment lines while the model writes
	// (OpenRouter's ": OPENROUTER PROCESSING").
	Comments bool
	// FilterChunk sends a first chunk with no choices and the prompt's
	// content filter results (Azure OpenAI).
	FilterChunk bool
	// RetryAfterMs adds OpenAI's retry-after-ms beside Retry-After on a
	// 429 that sets Retry-After.
	RetryAfterMs bool
}

// StrictSupport is what a provider does with response_format
// json_schema.
type StrictSupport int

const (
	// StrictChecked takes strict mode and refuses a schema outside its
	// documented rules (CheckStrict) with a 400, as OpenAI does.
	StrictChecked StrictSupport = iota
	// StrictIgnored takes a json_schema, ignores strict, and constrains
	// the reply with the schema (Ollama, vLLM).
	StrictIgnored
	// StrictRefused answers 400 to any json_schema (llama.cpp's server
	// before it took one; LM Studio and others).
	StrictRefused
)

// UsageStyle is when a streamed reply carries its token usage.
type UsageStyle int

const (
	// UsageWhenAsked sends a last chunk with no choices and the usage
	// when stream_options.include_usage is set (OpenAI, Azure, Ollama,
	// vLLM).
	UsageWhenAsked UsageStyle = iota
	// UsageAlways puts the usage in the stream's last chunk whether asked
	// or not (OpenRouter; llama.cpp's server, on the finish chunk).
	UsageAlways
	// UsageNever sends no usage at all.
	UsageNever
)

// The providers apprun is documented to work with.
var (
	OpenAI = Profile{Name: "OpenAI", Strict: StrictChecked, Usage: UsageWhenAsked, RetryAfterMs: true}
	// AzureOpenAI at api-version 2024-10-21.
	AzureOpenAI = Profile{Name: "Azure OpenAI", Azure: true, Strict: StrictChecked, Usage: UsageWhenAsked, FilterChunk: true, RetryAfterMs: true}
	// AzureOpenAIOld is an api-version before 2024-09-01-preview: no
	// stream_options and no structured outputs.
	AzureOpenAIOld = Profile{Name: "Azure OpenAI (api-version 2024-06-01)", Azure: true, Strict: StrictRefused, Usage: UsageNever,
		RefusesStreamOptions: true, FilterChunk: true}
	OpenRouter = Profile{Name: "OpenRouter", Strict: StrictChecked, Usage: UsageAlways, Comments: true}
	Ollama     = Profile{Name: "Ollama", Strict: StrictIgnored, Usage: UsageWhenAsked}
	VLLM       = Profile{Name: "vLLM", Strict: StrictIgnored, Usage: UsageWhenAsked}
	LlamaCpp   = Profile{Name: "llama.cpp", Strict: StrictRefused, Usage: UsageAlways}
)

// Profiles is every provider profile, for tests that run each.
var Profiles = []Profile{OpenAI, AzureOpenAI, AzureOpenAIOld, OpenRouter, Ollama, VLLM, LlamaCpp}

// refusal is how a profile refuses a request's shape: a status and the
// provider's error body, or 0.
func (p Profile) refusal(req Received) (int, map[string]any) {
	if p.RefusesStreamOptions && req.StreamOptions != nil {
		return http.StatusBadRequest, openAIError("Unrecognized request argument supplied: stream_options", "invalid_request_error", "")
	}
	format := req.Format()
	switch {
	case format == "json_object" && p.NoJSONObject:
		return http.StatusBadRequest, openAIError(`response_format type must be one of "text" or "json_schema"`, "invalid_request_error", "response_format")
	case format == "json_schema" && p.Strict == StrictRefused:
		if p.Azure {
			return http.StatusBadRequest, openAIError("response_format value as json_schema is enabled only for api versions 2024-08-01-preview and later",
				"invalid_request_error", "response_format")
		}
		return http.StatusBadRequest, map[string]any{"error": map[string]any{"code": 400, "type": "invalid_request_error",
			"message": `response_format type must be one of "text" or "json_object", but got: json_schema`}}
	case format == "json_schema" && p.Strict == StrictChecked && req.JSONSchema().Strict:
		if err := CheckStrict(req.JSONSchema().Schema); err != nil {
			return http.StatusBadRequest, openAIError("Invalid schema for response_format '"+req.JSONSchema().Name+"': "+err.Error(),
				"invalid_request_error", "response_format")
		}
	}
	return 0, nil
}

// openAIError is OpenAI's error body.
func openAIError(msg, typ, param string) map[string]any {
	e := map[string]any{"message": msg, "type": typ, "code": nil, "param": nil}
	if param != "" {
		e["param"] = param
	}
	return map[string]any{"error": e}
}
