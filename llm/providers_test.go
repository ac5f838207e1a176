package llm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/llm"
	"github.com/apprun/apprun/llm/llmtest"
)

var planSchema = json.RawMessage(`{"type":"object","required":["title"],"properties":{"title":{"type":"string","minLength":1},"note":{"type":"string"}}}`)

// clientFor is a client for a fake provider, configured as docs/apps.md
// says for that provider.
func clientFor(t *testing.T, srv *llmtest.Server, mode string, noStream bool) *llm.Client {
	t.Helper()
	cfg := llm.Config{BaseURL: srv.BaseURL(), APIKey: "sk-test", Model: "test-model", JSONMode: mode, NoStream: noStream,
		MaxAttempts: 3, Backoff: 10 * time.Millisecond}
	if srv.Profile.Azure {
		cfg.Provider, cfg.APIVersion = llm.ProviderAzure, llmtest.APIVersion
	}
	c, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Every provider's wire differences are met, streamed and not: the
// reply, the usage where the provider reports it, the address and key.
func TestEveryProviderProfileCompletes(t *testing.T) {
	t.Parallel()
	for _, p := range llmtest.Profiles {
		for _, noStream := range []bool{false, true} {
			name := p.Name
			if noStream {
				name += " not streamed"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				srv := llmtest.NewProvider(p)
				defer srv.Close()
				srv.Script(llmtest.Reply{Text: `{"title":"hello"}`, Chunks: 4})
				c := clientFor(t, srv, "", noStream)
				var grew []int
				reply, err := c.Complete(context.Background(), llm.Request{System: "s", User: "u", SchemaName: "plan", Schema: planSchema},
					llm.Watch{Writing: func(n int) { grew = append(grew, n) }})
				if err != nil || reply.Text != `{"title":"hello"}` {
					t.Fatalf("Complete = %q, %v", reply.Text, err)
				}
				if (p.Usage == llmtest.UsageNever) != (reply.Usage == nil) {
					t.Fatalf("usage %+v, want it exactly when the provider reports it", reply.Usage)
				}
				if !noStream && len(grew) != 4 || noStream && len(grew) != 0 {
					t.Fatalf("writing reported %v", grew)
				}
				last := srv.Received()[len(srv.Received())-1]
				if last.Stream == noStream {
					t.Fatalf("stream %v, want %v", last.Stream, !noStream)
				}
				if !noStream && p.Usage != llmtest.UsageNever && (last.StreamOptions == nil || !last.StreamOptions.IncludeUsage) {
					t.Fatal("a streamed request did not ask for its usage")
				}
				if noStream && last.StreamOptions != nil {
					t.Fatal("stream_options sent on a request that is not streamed (OpenAI refuses it)")
				}
				if p.Azure {
					if last.Path != "/openai/deployments/test-model/chat/completions" || last.Query.Get("api-version") != llmtest.APIVersion ||
						last.Header.Get("Api-Key") != "sk-test" {
						t.Fatalf("Azure request at %s?%s with api-key %q", last.Path, last.Query.Encode(), last.Header.Get("Api-Key"))
					}
				} else if last.Header.Get("Authorization") != "Bearer sk-test" {
					t.Fatalf("Authorization %q", last.Header.Get("Authorization"))
				}
				wantMode := map[llmtest.StrictSupport]string{llmtest.StrictChecked: llm.JSONSchema, llmtest.StrictIgnored: llm.JSONSchema,
					llmtest.StrictRefused: llm.JSONObject}[p.Strict]
				if reply.JSONMode != wantMode {
					t.Fatalf("answered in JSON mode %s, want %s", reply.JSONMode, wantMode)
				}
			})
		}
	}
}

// auto asks for strict mode; a provider that refuses it is asked once
// more in json_object, and later requests go straight to json_object.
func TestAutoFallsBackOnceAndRemembers(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewProvider(llmtest.LlamaCpp)
	defer srv.Close()
	var logged bytes.Buffer
	c, err := llm.New(llm.Config{BaseURL: srv.BaseURL(), Model: "m", JSONMode: llm.JSONAuto, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.Complete(context.Background(), llm.Request{System: "s", User: "u", SchemaName: "plan", Schema: planSchema}, llm.Watch{}); err != nil {
			t.Fatal(err)
		}
	}
	var formats []string
	for _, r := range srv.Received() {
		formats = append(formats, r.Format())
	}
	if strings.Join(formats, ",") != "json_schema,json_object,json_object,json_object" {
		t.Fatalf("formats asked: %v, want one strict request, then json_object for good", formats)
	}
	if s := c.Sent(llm.Request{}); s.JSONMode != llm.JSONObject {
		t.Fatalf("Sent says JSON mode %s, want the one in use", s.JSONMode)
	}
	if n := strings.Count(logged.String(), "refused a JSON mode"); n != 1 || !strings.Contains(logged.String(), "refused=json_schema now=json_object") {
		t.Fatalf("the fall back logged %d times:\n%s", n, logged.String())
	}
}

// An old Azure api-version refuses stream_options and json_schema: both
// are left out, once each, and the run's reply still comes.
func TestAnOldAzureAPIVersionIsMetOnce(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewProvider(llmtest.AzureOpenAIOld)
	defer srv.Close()
	c := clientFor(t, srv, "", false)
	for range 2 {
		reply, err := c.Complete(context.Background(), llm.Request{System: "s", User: "u", SchemaName: "plan", Schema: planSchema}, llm.Watch{})
		if err != nil || reply.Text != "{}" || reply.Attempts != 1 {
			t.Fatalf("Complete = %+v, %v", reply, err)
		}
	}
	if n := len(srv.Received()); n != 4 {
		t.Fatalf("%d requests, want 3 for the first completion (two refusals) and 1 for the second", n)
	}
}

// A mode set explicitly is not fallen back from: the provider's refusal
// fails the completion, in words.
func TestAnExplicitModeIsNotFallenBackFrom(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewProvider(llmtest.LlamaCpp)
	defer srv.Close()
	_, err := clientFor(t, srv, llm.JSONSchema, false).Complete(context.Background(),
		llm.Request{System: "s", User: "u", Schema: planSchema}, llm.Watch{})
	var le *llm.Error
	if !errors.As(err, &le) || le.Kind != llm.Rejected || len(srv.Received()) != 1 {
		t.Fatalf("Complete error %v after %d requests, want rejected after 1", err, len(srv.Received()))
	}
	if le.Words() != "The model provider refused the request (400, bad request)." || !strings.Contains(le.Details(), "json_schema") {
		t.Fatalf("words %q, details %q", le.Words(), le.Details())
	}
}

// Each wait before another try is heard, with the try it leads to.
func TestWaitsAreReported(t *testing.T) {
	t.Parallel()
	srv := llmtest.New()
	defer srv.Close()
	srv.Script(llmtest.Reply{Status: 500}, llmtest.Reply{Status: 429, Header: http.Header{"Retry-After": {"0.05"}}}, llmtest.Reply{Text: "{}"})
	var waits []llm.Wait
	if _, err := newClient(t, srv, "").Complete(context.Background(), llm.Request{System: "s", User: "u"},
		llm.Watch{Waiting: func(w llm.Wait) { waits = append(waits, w) }}); err != nil {
		t.Fatal(err)
	}
	if len(waits) != 2 || waits[0] != (llm.Wait{Attempt: 2, Of: 3, In: 10 * time.Millisecond, Status: 500}) ||
		waits[1] != (llm.Wait{Attempt: 3, Of: 3, In: 50 * time.Millisecond, Status: 429}) {
		t.Fatalf("waits %+v", waits)
	}
}

// A model that declines (strict mode's refusal member) fails with what
// it said, streamed and not.
func TestADeclineIsAnErrorOfItsOwn(t *testing.T) {
	t.Parallel()
	for _, noStream := range []bool{false, true} {
		srv := llmtest.New()
		srv.Script(llmtest.Reply{Refusal: "I can't help with that."})
		_, err := clientFor(t, srv, "", noStream).Complete(context.Background(), llm.Request{System: "s", User: "u"}, llm.Watch{})
		srv.Close()
		var le *llm.Error
		if !errors.As(err, &le) || le.Kind != llm.Declined || le.Words() != "The model declined to write this: I can't help with that." {
			t.Fatalf("not streamed %v: %v", noStream, err)
		}
	}
}

// Failures say what happened in words, and keep the client's text apart.
func TestFailuresAreSaidInWords(t *testing.T) {
	t.Parallel()
	srv := llmtest.New()
	defer srv.Close()
	srv.Script(llmtest.Reply{Status: 500}, llmtest.Reply{Status: 502}, llmtest.Reply{Status: 503})
	_, err := newClient(t, srv, "").Complete(context.Background(), llm.Request{System: "s", User: "u"}, llm.Watch{})
	var le *llm.Error
	if !errors.As(err, &le) || le.Words() != "The model provider did not answer after 3 attempts (the last: 503, service unavailable)." ||
		le.Details() != "HTTP 503: Service Unavailable" {
		t.Fatalf("words %q details %q", le.Words(), le.Details())
	}
}

func TestAzureNeedsAnAPIVersion(t *testing.T) {
	t.Parallel()
	for _, cfg := range []llm.Config{
		{BaseURL: "https://x.openai.azure.com", Model: "gpt", Provider: llm.ProviderAzure},
		{BaseURL: "https://x", Model: "m", Provider: "anthropic"},
	} {
		if _, err := llm.New(cfg); err == nil {
			t.Fatalf("%+v was accepted", cfg)
		}
	}
}

// A stream that stops mid-reply (no finish reason, no usage, no [DONE])
// is a dropped connection: tried again, and said so when it keeps
// happening.
func TestACutStreamIsTriedAgain(t *testing.T) {
	t.Parallel()
	srv := llmtest.New()
	defer srv.Close()
	srv.Script(llmtest.Reply{Text: `{"title":`, Cut: true}, llmtest.Reply{Text: `{"title":"whole"}`})
	c := newClient(t, srv, "")
	reply, err := c.Complete(context.Background(), llm.Request{System: "s", User: "u"}, llm.Watch{})
	if err != nil || reply.Text != `{"title":"whole"}` || reply.Attempts != 2 {
		t.Fatalf("Complete = %+v, %v; want the whole reply on the second attempt", reply, err)
	}
	srv.Script(llmtest.Reply{Cut: true}, llmtest.Reply{Text: "{", Cut: true}, llmtest.Reply{Text: "{", Cut: true})
	_, err = c.Complete(context.Background(), llm.Request{System: "s", User: "u"}, llm.Watch{})
	var le *llm.Error
	if !errors.As(err, &le) || le.Kind != llm.Unavailable || le.Words() != "The model provider did not answer after 3 attempts (the last: its reply stopped before its end)." {
		t.Fatalf("Complete error %v", err)
	}
}

// Error answers in other providers' shapes are read as OpenAI's: a
// refused JSON mode still falls back, a refused key is still refused
// at once, and the provider's words are in the details.
func TestErrorAnswersInOtherShapesAreRead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, ctype string
		status            int
		fallsBack         bool
		details           string
	}{
		{"error as a string", `{"error":"'response_format.type' must be 'json_object' or 'text'"}`, "", 400, true,
			"HTTP 400: 'response_format.type' must be 'json_object' or 'text'"},
		{"vLLM's shape", `{"object":"error","message":"response_format json_schema is not supported","type":"BadRequestError","param":null,"code":400}`,
			"", 400, true, "HTTP 400: response_format json_schema is not supported"},
		{"plain text", "Bad Request: json_schema is not supported here", "text/plain", 400, true,
			"HTTP 400: Bad Request: json_schema is not supported here"},
		{"a refused key, as a string", `{"error":"invalid api key"}`, "", 401, false, "HTTP 401: invalid api key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New()
			defer srv.Close()
			srv.Script(llmtest.Reply{Status: tc.status, Body: tc.body, ContentType: tc.ctype}, llmtest.Reply{Text: "{}"})
			_, err := newClient(t, srv, llm.JSONAuto).Complete(context.Background(), llm.Request{System: "s", User: "u", Schema: planSchema}, llm.Watch{})
			got := srv.Received()
			if tc.fallsBack {
				if err != nil || len(got) != 2 || got[1].Format() != "json_object" {
					t.Fatalf("%v after %d requests, want a fall back to json_object", err, len(got))
				}
				return
			}
			var le *llm.Error
			if !errors.As(err, &le) || le.Kind != llm.Rejected || len(got) != 1 || le.Details() != tc.details {
				t.Fatalf("error %v (details %q) after %d requests, want rejected at once with %q", err, le.Details(), len(got), tc.details)
			}
		})
	}
}

// A base URL that answers with a web page is not a provider: refused at
// once, in words, not read as an empty reply.
func TestAWebPageIsNotACompletion(t *testing.T) {
	t.Parallel()
	srv := llmtest.New()
	defer srv.Close()
	srv.Script(llmtest.Reply{Status: 200, Body: "<!doctype html><title>Welcome</title>", ContentType: "text/html; charset=utf-8"})
	_, err := newClient(t, srv, "").Complete(context.Background(), llm.Request{System: "s", User: "u"}, llm.Watch{})
	var le *llm.Error
	if !errors.As(err, &le) || le.Kind != llm.Rejected || len(srv.Received()) != 1 ||
		le.Words() != "The model provider's address answered with a web page, not a chat completion." {
		t.Fatalf("error %v after %d requests", err, len(srv.Received()))
	}
}

func TestDurationsInWords(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{20 * time.Millisecond: "1 s", 3 * time.Second: "3 s", 10 * time.Minute: "10 min",
		2*time.Hour + 5*time.Minute: "2 h 5 min", 3 * time.Hour: "3 h"} {
		if got := llm.Duration(d); got != want {
			t.Errorf("Duration(%s) = %q, want %q", d, got, want)
		}
	}
}
