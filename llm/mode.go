package llm

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
)

// JSON modes: how a request asks the model for a JSON object. Whatever
// the mode, the instructions carry the App's whole output schema and the
// reply is checked against it.
const (
	// JSONAuto asks for strict structured outputs, and falls back to
	// json_object, then to the prompt alone, each time the provider
	// refuses what was asked; the client remembers (the default).
	JSONAuto = "auto"
	// JSONSchema sends response_format json_schema with the schema
	// converted for strict mode (StrictSchema) and strict: true (OpenAI,
	// Azure OpenAI, OpenRouter; Ollama, vLLM and llama.cpp take the schema
	// and constrain the reply with it).
	JSONSchema = "json_schema"
	// JSONObject sends response_format {"type":"json_object"}.
	JSONObject = "json_object"
	// JSONPrompt sends no response_format: the instructions alone ask
	// for JSON.
	JSONPrompt = "prompt"
	// jsonNone is JSONPrompt's name before 2026-12, still read.
	jsonNone = "none"
)

// maxFallbacks bounds how often one completion is made again in another
// way: two JSON modes and the usage option.
const maxFallbacks = 3

// modeChain is the JSON modes a setting tries, in order.
func modeChain(setting string) ([]string, error) {
	switch setting {
	case "", JSONAuto:
		return []string{JSONSchema, JSONObject, JSONPrompt}, nil
	case JSONSchema, JSONObject, JSONPrompt:
		return []string{setting}, nil
	case jsonNone:
		return []string{JSONPrompt}, nil
	}
	return nil, fmt.Errorf("unknown JSON mode %q", setting)
}

// mode is the JSON mode requests use now.
func (c *Client) mode() string { return (*c.modes.Load())[0] }

// fallBack reports whether err is the provider refusing a part of the
// request that can be left out (the JSON mode, in auto; the usage
// option), and if so leaves it out of this and every later request.
func (c *Client) fallBack(err error, mode string) bool {
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest && apiErr.StatusCode != http.StatusUnprocessableEntity {
		return false
	}
	said := strings.ToLower(apiErr.Param + " " + apiErr.Message + " " + apiErr.RawJSON())
	if !c.cfg.NoStream && !c.noUsageOption.Load() && strings.Contains(said, "stream_options") {
		if c.noUsageOption.CompareAndSwap(false, true) {
			c.cfg.Logger.Warn("the model provider refused stream_options; requests go without it from now on (no token usage when streamed)",
				"status", apiErr.StatusCode, "provider_said", apiErr.Message)
		}
		return true
	}
	modes := c.modes.Load()
	cur := *modes
	if cur[0] != mode {
		return true // another request fell back meanwhile: ask as it does
	}
	if len(cur) < 2 {
		return false
	}
	for _, word := range []string{"response_format", "json_schema", "json_object", "strict", "structured output", "schema"} {
		if strings.Contains(said, word) {
			rest := cur[1:]
			if c.modes.CompareAndSwap(modes, &rest) {
				c.cfg.Logger.Warn("the model provider refused a JSON mode; requests use the next from now on",
					"refused", mode, "now", rest[0], "status", apiErr.StatusCode, "provider_said", apiErr.Message)
			}
			return true
		}
	}
	return false
}
