package llm

import (
	"encoding/json"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// Request is one completion: instructions, the user message (data), and the
// JSON Schema the reply must follow.
type Request struct {
	System string
	User   string
	// Turns follow the user message: earlier replies and what was said
	// about them (a repair: the reply, then the problems found in it).
	Turns []Turn
	// SchemaName names the output shape (letters, digits, _ and -).
	SchemaName string
	Schema     json.RawMessage
	// StrictSchema is Schema converted for strict mode (StrictSchema);
	// when empty and strict mode is asked for, it is converted here.
	StrictSchema json.RawMessage
	// Temperature, when set, is sent as is.
	Temperature *float64
	// Model, when set, is asked for instead of the configured model (a
	// rerun with another model).
	Model string
}

// Turn is one message after the user message.
type Turn struct {
	// Role is "assistant" (an earlier reply) or "user".
	Role    string
	Content string
}

// Reply is a completion's text, with the model that wrote it and the
// tokens it used when the provider reports them.
type Reply struct {
	Text  string
	Model string
	Usage *Usage
	// Refusal is what the model said instead of a reply when it declined
	// (strict mode's refusal member).
	Refusal  string
	Attempts int
	// JSONMode is how the reply was asked to be JSON.
	JSONMode string
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

// Sent says what req would send now: the provider's base URL (without
// any user or query part), the model and the parameters.
func (c *Client) Sent(req Request) Sent {
	s := Sent{Provider: redactURL(c.cfg.BaseURL), Model: c.cfg.Model, JSONMode: c.mode()}
	if req.Model != "" {
		s.Model = req.Model
	}
	if req.Temperature != nil && !c.cfg.NoTemperature {
		s.Temperature = req.Temperature
	}
	return s
}

// params is req on the wire, asking for JSON the way mode says.
func (c *Client) params(req Request, mode string) openai.ChatCompletionNewParams {
	model := c.cfg.Model
	if req.Model != "" {
		model = req.Model
	}
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(req.System), openai.UserMessage(req.User)}
	for _, t := range req.Turns {
		if t.Role == "assistant" {
			msgs = append(msgs, openai.AssistantMessage(t.Content))
		} else {
			msgs = append(msgs, openai.UserMessage(t.Content))
		}
	}
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(model), Messages: msgs}
	if !c.cfg.NoStream && !c.noUsageOption.Load() {
		// The usage comes in the stream's last chunk (a provider that
		// ignores the option sends none, and the record says so).
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	}
	if req.Temperature != nil && !c.cfg.NoTemperature {
		p.Temperature = openai.Float(*req.Temperature)
	}
	switch mode {
	case JSONObject:
		p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
	case JSONSchema:
		strict := req.StrictSchema
		if len(strict) == 0 && len(req.Schema) > 0 {
			strict, _ = StrictSchema(req.Schema)
		}
		if len(strict) == 0 {
			break // no schema given: the prompt asks
		}
		name := req.SchemaName
		if name == "" {
			name = "output"
		}
		p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: name, Schema: strict, Strict: openai.Bool(true)}}}
	}
	return p
}
