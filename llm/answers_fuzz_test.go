package llm

import (
	"encoding/json"
	"testing"
)

// FuzzOpenAIErrorBody: whatever a provider's error answer holds, it is
// read as OpenAI's shape, with a message.
func FuzzOpenAIErrorBody(f *testing.F) {
	for _, s := range []string{`{"error":{"message":"m","type":"t"}}`, `{"error":"e"}`, `{"object":"error","message":"m"}`, `{"detail":"d"}`,
		"Bad Gateway", "", `{"error":{"message":null}}`, `{"error":[1]}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var got struct {
			Error struct {
				Message *string `json:"message"`
			} `json:"error"`
		}
		out := openAIErrorBody(body)
		if err := json.Unmarshal(out, &got); err != nil || got.Error.Message == nil {
			t.Fatalf("openAIErrorBody(%q) = %s: not OpenAI's shape (%v)", body, out, err)
		}
	})
}
