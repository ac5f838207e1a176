package llm

import (
	"context"
	"strings"

	"github.com/openai/openai-go/v3"
)

// once makes one request, streamed unless the config says not.
func (c *Client) once(ctx context.Context, params openai.ChatCompletionNewParams, writing func(int)) (Reply, error) {
	if c.cfg.NoStream {
		return c.whole(ctx, params)
	}
	stream := c.chat().NewStreaming(ctx, params)
	defer stream.Close()
	var text, refusal strings.Builder
	var out Reply
	ended := false // a finish reason or the usage chunk came: the reply is whole
	for stream.Next() {
		chunk := stream.Current()
		if chunk.Model != "" {
			out.Model = chunk.Model
		}
		if u := chunk.Usage; u.TotalTokens > 0 || u.PromptTokens > 0 || u.CompletionTokens > 0 {
			out.Usage = &Usage{Prompt: u.PromptTokens, Completion: u.CompletionTokens, Total: u.TotalTokens}
			ended = true
		}
		if len(chunk.Choices) == 0 {
			continue
		}
		if chunk.Choices[0].FinishReason != "" {
			ended = true
		}
		delta := chunk.Choices[0].Delta
		refusal.WriteString(delta.Refusal)
		if delta.Content == "" {
			continue
		}
		text.WriteString(delta.Content)
		if writing != nil {
			writing(text.Len())
		}
	}
	if err := stream.Err(); err != nil {
		return out, err
	}
	if !ended {
		return out, errCutOff
	}
	out.Text, out.Refusal = text.String(), refusal.String()
	return out, nil
}

// whole makes one request for a whole reply, not streamed.
func (c *Client) whole(ctx context.Context, params openai.ChatCompletionNewParams) (Reply, error) {
	res, err := c.chat().New(ctx, params)
	if err != nil {
		return Reply{}, err
	}
	out := Reply{Model: res.Model}
	if u := res.Usage; u.TotalTokens > 0 || u.PromptTokens > 0 || u.CompletionTokens > 0 {
		out.Usage = &Usage{Prompt: u.PromptTokens, Completion: u.CompletionTokens, Total: u.TotalTokens}
	}
	if len(res.Choices) > 0 {
		out.Text, out.Refusal = res.Choices[0].Message.Content, res.Choices[0].Message.Refusal
	}
	return out, nil
}

// chat is the provider's chat completions API.
func (c *Client) chat() *openai.ChatCompletionService {
	return &c.api.(*openai.Client).Chat.Completions
}
