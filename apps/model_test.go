package apps_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	. "github.com/apprun/apprun/node/nodetest"

	"github.com/apprun/apprun/apps"
	"github.com/apprun/apprun/llm/llmtest"
	"github.com/apprun/apprun/node"
)

func TestColdEmailRunWritesWithTheModelAndStreamsProgress(t *testing.T) {
	t.Parallel()
	fake := llmtest.New()
	defer fake.Close()
	fake.Script(llmtest.Reply{Text: ModelSequence, Chunks: 12, ChunkDelay: 100 * time.Millisecond})
	h := Start(t, WithLimits(NoLimits), WithModel(fake))
	a := h.Account(100)
	bc := h.Do("POST", "/api/v1/brand-contexts", a.Key, map[string]any{"name": "Acme Ledger", "voice": "Plain words, no hype",
		"audience": "Agency founders"}).JSON(t)["brand_context_id"].(string)
	body := ColdEmailRun()
	body["brand_context_id"] = bc
	runNo := h.Create(a, body)
	evs := h.Collect(a, runNo)
	writing := 0
	for _, ev := range evs {
		if msg, _ := ev.Data["message"].(string); ev.Event == "tool_running" && strings.HasPrefix(msg, "The model is writing") {
			writing++
		}
	}
	// 12 chunks over 1.1 s, progress at most every 500 ms: a few events, not 12.
	if writing < 1 || writing > 4 {
		t.Fatalf("%d progress events while the model streamed, want a throttled few: %+v", writing, evs)
	}
	run := h.WaitRun(a, runNo)
	out, _ := run["output"].(map[string]any)
	emails, _ := out["emails"].([]any)
	if run["status"] != "completed" || len(emails) != 3 || !strings.Contains(emails[0].(map[string]any)["body"].(string), "model-written opener") ||
		out["language"] != "English" || out["cta_goal"] != "Interest check" {
		t.Fatalf("run %v: want the model's emails in output", run)
	}
	if bal, _ := h.Balance(a); bal != 75 {
		t.Fatalf("balance %d, want 100 - 25", bal)
	}
	reqs := fake.Received()
	if len(reqs) != 1 || reqs[0].Model != "fake-model" || reqs[0].Header.Get("Authorization") != "Bearer sk-test" {
		t.Fatalf("model requests %+v", reqs)
	}
	user := reqs[0].User()
	if !strings.Contains(user, "<brand_context>") || !strings.Contains(user, "Plain words, no hype") ||
		!strings.Contains(user, "<input>") || !strings.Contains(user, "Acme Ledger automates bookkeeping.") {
		t.Fatalf("the model did not get the input and brand context as data:\n%s", user)
	}
	if strings.Contains(reqs[0].System(), "Acme Ledger automates") || strings.Contains(reqs[0].System(), "Plain words") {
		t.Fatalf("user data in the instructions:\n%s", reqs[0].System())
	}
}

func TestModelFailuresFailTheRunAndRefundIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		script []llmtest.Reply
		code   string
		calls  int
	}{
		{"a persistent 500", []llmtest.Reply{{Status: 500}, {Status: 500}, {Status: 500}}, "model_unavailable", 3},
		{"an unusable reply, repaired once", []llmtest.Reply{{Text: "Here are some emails you might like!"}, {Text: "Still no JSON."}}, "model_reply_invalid", 2},
		{"a reply of the wrong shape, repaired once", []llmtest.Reply{{Text: `{"emails":"three of them"}`}, {Text: `{"emails":[]}`}}, "model_reply_invalid", 2},
		{"a refused request", []llmtest.Reply{{Status: 401}}, "model_rejected", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := llmtest.New()
			defer fake.Close()
			fake.Script(tc.script...)
			h := Start(t, WithLimits(NoLimits), WithModel(fake))
			a := h.Account(100)
			runNo := h.Create(a, ColdEmailRun())
			h.FailedWith(a, runNo, tc.code, 100)
			if n := len(fake.Received()); n != tc.calls {
				t.Fatalf("%d model calls, want %d", n, tc.calls)
			}
		})
	}
}

func TestA429WithRetryAfterIsWaitedOutThenTheRunCompletes(t *testing.T) {
	t.Parallel()
	fake := llmtest.New()
	defer fake.Close()
	fake.Script(llmtest.Reply{Status: 429, Header: http.Header{"Retry-After": {"1"}}}, llmtest.Reply{Text: ModelSequence})
	h := Start(t, WithLimits(NoLimits), WithModel(fake))
	a := h.Account(100)
	began := time.Now()
	runNo := h.Create(a, ColdEmailRun())
	if run := h.WaitRun(a, runNo); run["status"] != "completed" {
		t.Fatalf("run %v", run)
	}
	if took := time.Since(began); took < time.Second {
		t.Fatalf("completed after %s: the Retry-After of 1s was not honoured", took)
	}
	if n := len(fake.Received()); n != 2 {
		t.Fatalf("%d model calls, want the 429 and the retry", n)
	}
}

func TestOSSGrowthRunReadsTheRepositoryAndWritesAPlan(t *testing.T) {
	gh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/repos/acme/ledger":
			_, _ = w.Write([]byte(`{"full_name":"acme/ledger","html_url":"https://github.com/acme/ledger","description":"Bookkeeping for agencies","topics":["accounting"],"stargazers_count":42}`))
		case "/repos/acme/ledger/readme":
			_, _ = w.Write([]byte("# Acme Ledger\nClose your books in a day."))
		default:
			http.NotFound(w, r)
		}
	}))
	defer gh.Close()
	fake := llmtest.New()
	defer fake.Close()
	plan := `{"repository":"acme/ledger","positioning":"Bookkeeping for agencies.","audiences":[{"who":"Agency founders","why_they_care":"Month-end"}],` +
		`"channels":[{"channel":"Indie Hackers","tactic":"A build-in-public thread"}],"plan":[{"when":"Week 1","actions":["Rewrite the README intro"]},` +
		`{"when":"Week 2","actions":["Post the thread"]}],"metrics":["Weekly installs"]}`
	fake.Script(llmtest.Reply{Text: plan})
	h := Start(t, WithLimits(NoLimits), WithModel(fake), func(c *node.Config) { c.GitHubAPI = gh.URL })
	a := h.Account(100)
	runNo := h.Create(a, map[string]any{"app_slug": "oss-growth", "input": map[string]any{"repo_url": "https://github.com/acme/ledger"}})
	run := h.WaitRun(a, runNo)
	out, _ := run["output"].(map[string]any)
	if run["status"] != "completed" || out["repository"] != "acme/ledger" || out["positioning"] != "Bookkeeping for agencies." {
		t.Fatalf("run %v", run)
	}
	if !strings.Contains(fake.Received()[0].User(), "Close your books in a day.") {
		t.Fatalf("the model did not get the README:\n%s", fake.Received()[0].User())
	}
	// A repository GitHub does not have: failed before any model call, refunded.
	bal, _ := h.Balance(a)
	runNo = h.Create(a, map[string]any{"app_slug": "oss-growth", "input": map[string]any{"repo_url": "https://github.com/acme/missing"}})
	h.FailedWith(a, runNo, "source_unavailable", bal)
	if n := len(fake.Received()); n != 1 {
		t.Fatalf("%d model calls, want only the first run's", n)
	}
}

func TestAppsThatNeedAModelAreAbsentWithoutOne(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	r := h.Do("POST", "/api/v1/runs", a.Key, map[string]any{"app_slug": "linkedin-post-writer", "input": map[string]any{"topic": "x"}})
	if r.Status != 404 || r.ErrorCode(t) != "app_not_found" {
		t.Fatalf("create without a model: %d %s, want 404 app_not_found", r.Status, r.Body)
	}
	defs, err := apps.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	// listed is the shipped Apps the capability list shows, by category.
	listed := func(h *Harness) map[string]string {
		out := map[string]string{}
		for _, e := range h.Do("GET", "/api/v1/capabilities", h.Account(1).Key, nil).JSON(t)["data"].([]any) {
			m := e.(map[string]any)
			out[m["slug"].(string)], _ = m["category"].(string)
		}
		return out
	}
	without, noModel := listed(h), []string{}
	for _, d := range defs {
		if !d.NeedsModel {
			noModel = append(noModel, d.Slug)
		}
		if _, ok := without[d.Slug]; ok == d.NeedsModel {
			t.Errorf("without a model, %s listed %v (it needs a model: %v)", d.Slug, ok, d.NeedsModel)
		}
	}
	t.Logf("without a model: %d of %d shipped Apps run: %v", len(noModel), len(defs), noModel)
	// The built-in writer still writes the cold email writer's runs.
	if run := h.WaitRun(a, h.Create(a, ColdEmailRun())); run["status"] != "completed" {
		t.Fatalf("built-in run %v", run)
	}

	fake := llmtest.New()
	defer fake.Close()
	with := listed(Start(t, WithLimits(NoLimits), WithModel(fake)))
	if len(defs) != 63 {
		t.Errorf("%d shipped Apps, want the catalog's 63", len(defs))
	}
	for _, d := range defs {
		if with[d.Slug] != d.Category {
			t.Errorf("with a model, %s is listed in %q, want it in %q", d.Slug, with[d.Slug], d.Category)
		}
	}
}

func TestEveryShippedAppRunsThroughTheAPIWithTheModel(t *testing.T) {
	t.Parallel()
	defs, err := apps.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	fake := llmtest.New()
	defer fake.Close()
	gh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/readme") || strings.HasSuffix(r.URL.Path, "/languages") {
			http.NotFound(w, r) // best effort: the run goes on without them
			return
		}
		_, _ = w.Write([]byte(`{"full_name":"nats-io/nats-server","description":"NATS"}`))
	}))
	defer gh.Close()
	web := exampleSources(t) // the examples' https://example.com, served here
	h := Start(t, WithLimits(NoLimits), WithModel(fake), WithSourcesAllowPrivate(), func(c *node.Config) { c.GitHubAPI = gh.URL })
	a := h.Account(100_000)
	for _, d := range defs {
		for _, ex := range d.Examples {
			fake.Script(llmtest.Reply{Text: string(ex.Output)})
			input := map[string]any{}
			for k, v := range ex.Input {
				if s, ok := v.(string); ok && strings.HasPrefix(s, "https://example.com") {
					v = web.URL + strings.TrimPrefix(s, "https://example.com")
				}
				input[k] = v
			}
			runNo := h.Create(a, map[string]any{"app_slug": d.Slug, "input": input})
			run := h.WaitRun(a, runNo)
			summary, _ := run["summary"].(string)
			if run["status"] != "completed" || run["credit_cost"] != float64(d.Price) || summary == "" || strings.Contains(summary, "<no value>") {
				t.Fatalf("%s: run %v", d.Slug, run)
			}
			if got, _ := json.Marshal(run["output"]); !jsonHas(got, ex.Output) {
				t.Errorf("%s: output %s, want the model's %s (and the fields the App sets)", d.Slug, got, ex.Output)
			}
			// A reply outside the output schema, and its repair ("{}")
			// too, fail the run, refunded.
			fake.Script(llmtest.Reply{Text: `{"unexpected":true}`})
			bad := h.WaitRun(a, h.Create(a, map[string]any{"app_slug": d.Slug, "input": input}))
			if bad["status"] != "failed" || ErrCode(bad) != "model_reply_invalid" || bad["refunded_credits"] != float64(d.Price) {
				t.Errorf("%s: a reply outside its schema: %v, want model_reply_invalid, refunded", d.Slug, bad)
			}
		}
	}
	if n := len(fake.Received()); n != 3*len(defs) {
		t.Fatalf("%d model calls for %d Apps, want 3 each: a good reply, a bad one and its repair", n, len(defs))
	}
	// APPRUN_LLM_JSON_MODE=auto (the default) against a provider that
	// takes strict mode: every request of every App carries a strict
	// schema that holds to the provider's documented rules. The fake
	// refuses one that does not, as OpenAI does, and auto would then
	// fall back; so each request is checked here.
	for _, r := range fake.Received() {
		schema, strict := r.StrictSchema()
		if !strict {
			t.Fatalf("response_format %s, want strict json_schema", r.ResponseFormat)
		}
		if err := llmtest.CheckStrict(schema); err != nil {
			t.Errorf("a strict schema the provider refuses: %v\n%s", err, schema)
		}
	}
	var paid int64
	for _, d := range defs {
		paid += d.Price
	}
	if bal, active := h.Balance(a); bal != 100_000-paid || active != 0 {
		t.Fatalf("balance %d (%d active), want 100000 less one completed run of each App (%d)", bal, active, paid)
	}
}

// jsonHas reports whether the JSON object got has every member of want,
// each with the same value.
func jsonHas(got, want []byte) bool {
	var g, w map[string]any
	if json.Unmarshal(got, &g) != nil || json.Unmarshal(want, &w) != nil {
		return false
	}
	for k, v := range w {
		if !reflect.DeepEqual(g[k], v) {
			return false
		}
	}
	return true
}
