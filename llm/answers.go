package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3/option"
)

// Providers answer in shapes of their own around the Chat Completions
// wire format. openai-go reads OpenAI's; normalize makes the others read
// the same, so that every provider's failure is classed and worded alike:
//
//   - an error body whose "error" is a string (some gateways), or that
//     has only a top-level "message" (vLLM), or that is not JSON at all
//     (a proxy's text page), becomes {"error":{"message":…}}; openai-go
//     would otherwise fail to read it, and the failure would look like a
//     dropped connection, retried and never fallen back from;
//   - a success that is not a completion (an HTML page: a base URL that
//     points at a website) is an errNotCompletion, not an empty reply.

// maxErrorBody bounds what is read of an error answer.
const maxErrorBody = 64 << 10

// errNotCompletion is an answer of 2xx that is no chat completion.
type errNotCompletion struct {
	status int
	ctype  string
}

func (e *errNotCompletion) Error() string {
	return fmt.Sprintf("HTTP %d with Content-Type %q: not a chat completion", e.status, e.ctype)
}

// errCutOff is a streamed reply that ended without its end: no finish
// reason, no usage chunk. It is tried again like a dropped connection.
var errCutOff = errors.New("the streamed reply stopped before its end (no finish_reason)")

func normalize(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res == nil {
		return res, err
	}
	ctype, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	if res.StatusCode < 400 {
		if ctype == "text/html" {
			res.Body.Close()
			return nil, &errNotCompletion{status: res.StatusCode, ctype: ctype}
		}
		return res, nil
	}
	body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(openAIErrorBody(body)))
	res.ContentLength = -1
	res.Header.Del("Content-Length")
	res.Header.Set("Content-Type", "application/json")
	return res, nil
}

// openAIErrorBody is body in OpenAI's error shape.
func openAIErrorBody(body []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) == nil {
		var inner struct {
			Message *string `json:"message"`
		}
		if raw, ok := m["error"]; ok && json.Unmarshal(raw, &inner) == nil && inner.Message != nil {
			return body // OpenAI's own
		}
		var msg string
		if raw, ok := m["error"]; ok && json.Unmarshal(raw, &msg) == nil {
			return wrapped(msg, m)
		}
		if raw, ok := m["message"]; ok && json.Unmarshal(raw, &msg) == nil {
			return wrapped(msg, m)
		}
		if raw, ok := m["detail"]; ok && json.Unmarshal(raw, &msg) == nil {
			return wrapped(msg, m)
		}
	}
	text := strings.TrimSpace(string(body))
	if len(text) > 500 {
		text = text[:500] + "…"
	}
	return wrapped(text, nil)
}

func wrapped(msg string, from map[string]json.RawMessage) []byte {
	e := map[string]any{"message": msg}
	for _, k := range []string{"type", "param", "code"} {
		if raw, ok := from[k]; ok {
			e[k] = raw
		}
	}
	b, _ := json.Marshal(map[string]any{"error": e})
	return b
}
