package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/llm"
	"github.com/apprun/apprun/llm/llmtest"
)

func newClient(t *testing.T, srv *llmtest.Server, mode string) *llm.Client {
	t.Helper()
	c, err := llm.New(llm.Config{BaseURL: srv.BaseURL(), APIKey: "sk-test", Model: "test-model", JSONMode: mode,
		MaxAttempts: 3, Backoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCompleteStreamsTheReplyAndReportsProgress(t *testing.T) {
	srv := llmtest.New()
	defer srv.Close()
	srv.Script(llmtest.Reply{Text: `{"greeting":"hello, world"}`, Chunks: 5})
	var seen []int
	reply, err := newClient(t, srv, "").Complete(context.Background(), llm.Request{System: "be brief", User: "say hi"},
		llm.Watch{Writing: func(n int) { seen = append(seen, n) }})
	text := reply.Text
	if err != nil || text != `{"greeting":"hello, world"}` {
		t.Fatalf("Complete = %q, %v", text, err)
	}
	// The usage in the stream's last chunk, and the model that wrote it.
	if reply.Model != "test-model" || reply.Usage == nil || reply.Usage.Prompt != 4 || reply.Usage.Completion != 2 || reply.Usage.Total != 6 {
		t.Fatalf("reply model %q usage %+v, want test-model and 4+2 tokens", reply.Model, reply.Usage)
	}
	if len(seen) != 5 || seen[len(seen)-1] != len(text) {
		t.Fatalf("progress calls %v, want 5 growing to %d", seen, len(text))
	}
	got := srv.Received()
	if len(got) != 1 || !got[0].Stream || got[0].Model != "test-model" || got[0].System() != "be brief" || got[0].User() != "say hi" {
		t.Fatalf("request received: %+v", got)
	}
	if h := got[0].Header.Get("Authorization"); h != "Bearer sk-test" {
		t.Fatalf("Authorization %q", h)
	}
	if got[0].Format() != "" {
		t.Fatalf("response_format %s: no schema given, so no strict json_schema either", got[0].ResponseFormat)
	}
}

func TestJSONModesShapeTheResponseFormat(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)
	for _, tc := range []struct {
		mode, want string
	}{
		{llm.JSONObject, `{"type":"json_object"}`},
		{llm.JSONSchema, `"json_schema":{"name":"plan","strict":true,"schema":{"additionalProperties":false,"properties":{"a":{"type":["string","null"]}},"required":["a"],"type":"object"}}`},
		{llm.JSONAuto, `"json_schema":{"name":"plan","strict":true,"schema":{"additionalProperties":false,"properties":{"a":{"type":["string","null"]}},"required":["a"],"type":"object"}}`},
		{llm.JSONPrompt, ``},
		{"none", ``},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			srv := llmtest.New()
			defer srv.Close()
			if _, err := newClient(t, srv, tc.mode).Complete(context.Background(), llm.Request{System: "s", User: "u", SchemaName: "plan", Schema: schema}, llm.Watch{}); err != nil {
				t.Fatal(err)
			}
			rf := string(srv.Received()[0].ResponseFormat)
			if tc.want == "" && rf != "" || !strings.Contains(rf, tc.want) {
				t.Fatalf("response_format %s, want %s", rf, tc.want)
			}
		})
	}
	if _, err := llm.New(llm.Config{BaseURL: "http://x", Model: "m", JSONMode: "yaml"}); err == nil {
		t.Fatal("an unknown JSON mode was accepted")
	}
}

func TestTemperatureIsSentUnlessTurnedOff(t *testing.T) {
	temp := 0.7
	for _, off := range []bool{false, true} {
		srv := llmtest.New()
		c, err := llm.New(llm.Config{BaseURL: srv.BaseURL(), Model: "m", NoTemperature: off})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Complete(context.Background(), llm.Request{System: "s", User: "u", Temperature: &temp}, llm.Watch{}); err != nil {
			t.Fatal(err)
		}
		got := srv.Received()[0].Temperature
		srv.Close()
		if (got == nil) != off || (!off && *got != 0.7) {
			t.Fatalf("NoTemperature=%v: temperature %v", off, got)
		}
	}
}

func TestRetries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		script   []llmtest.Reply
		deadline time.Duration
		kind     llm.Kind // 0: success
		requests int
		minWait  time.Duration
	}{
		{name: "429 honours Retry-After then succeeds", script: []llmtest.Reply{
			{Status: 429, Header: http.Header{"Retry-After": {"1"}}}, {Text: `{"ok":true}`}},
			requests: 2, minWait: time.Second},
		{name: "retry-after-ms wins over Retry-After", script: []llmtest.Reply{
			{Status: 429, Header: http.Header{"Retry-After-Ms": {"50"}, "Retry-After": {"30"}}}, {Text: `{"ok":true}`}},
			requests: 2},
		{name: "5xx is retried with backoff", script: []llmtest.Reply{{Status: 502}, {Status: 503}, {Text: `{"ok":true}`}}, requests: 3},
		{name: "persistent 500 gives up after the attempts", script: []llmtest.Reply{{Status: 500}, {Status: 500}, {Status: 500}, {Text: "never"}},
			kind: llm.Unavailable, requests: 3},
		{name: "a wait past the deadline is not waited", script: []llmtest.Reply{
			{Status: 429, Header: http.Header{"Retry-After": {"60"}}}, {Text: `{"ok":true}`}},
			deadline: 2 * time.Second, kind: llm.Unavailable, requests: 1},
		{name: "other 4xx is not retried", script: []llmtest.Reply{{Status: 401}, {Text: `{"ok":true}`}}, kind: llm.Rejected, requests: 1},
		{name: "404 unknown model is not retried", script: []llmtest.Reply{{Status: 404}}, kind: llm.Rejected, requests: 1},
		{name: "an empty reply is an error of its own", script: []llmtest.Reply{{Text: "  "}}, kind: llm.EmptyReply, requests: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New()
			defer srv.Close()
			srv.Script(tc.script...)
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			start := time.Now()
			reply, err := newClient(t, srv, "").Complete(ctx, llm.Request{System: "s", User: "u"}, llm.Watch{})
			text := reply.Text
			var le *llm.Error
			switch {
			case tc.kind == 0 && (err != nil || text != `{"ok":true}`):
				t.Fatalf("Complete = %q, %v; want success", text, err)
			case tc.kind != 0 && (!errors.As(err, &le) || le.Kind != tc.kind):
				t.Fatalf("Complete error %v, want kind %d", err, tc.kind)
			}
			if n := len(srv.Received()); n != tc.requests {
				t.Fatalf("%d requests, want %d", n, tc.requests)
			}
			if waited := time.Since(start); waited < tc.minWait {
				t.Fatalf("returned after %s, want at least the Retry-After of %s", waited, tc.minWait)
			}
		})
	}
}

func TestADroppedProviderIsRetriedThenUnavailable(t *testing.T) {
	srv := llmtest.New()
	url := srv.BaseURL()
	srv.Close() // nothing listens there any more
	c, err := llm.New(llm.Config{BaseURL: url, Model: "m", MaxAttempts: 2, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(context.Background(), llm.Request{System: "s", User: "u"}, llm.Watch{})
	var le *llm.Error
	if !errors.As(err, &le) || le.Kind != llm.Unavailable || le.Attempts != 2 {
		t.Fatalf("Complete error %v, want unavailable after 2 attempts", err)
	}
}
