package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/apprun/apprun/engine"
	. "github.com/apprun/apprun/node/nodetest"

	"github.com/kaptinlin/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolOutputSchema compiles the outputSchema tools/list gives the tool.
func toolOutputSchema(t *testing.T, s *sdk.ClientSession, name string) *jsonschema.Schema {
	t.Helper()
	tools, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == name {
			raw, _ := json.Marshal(tool.OutputSchema)
			schema, err := jsonschema.NewCompiler().Compile(raw)
			if err != nil {
				t.Fatalf("%s outputSchema %s: %v", name, raw, err)
			}
			return schema
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}

// structured decodes a result's structured content.
func structured(t *testing.T, res *sdk.CallToolResult) map[string]any {
	t.Helper()
	b, _ := json.Marshal(res.StructuredContent)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structured content %s", b)
	}
	return m
}

func TestMCPRunsAppsAsToolsWithTheSameCreditsAndHistory(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	var mu sync.Mutex
	var progress []string
	s, err := MCPConnect(t, h, a.Key, func(p *sdk.ProgressNotificationParams) {
		mu.Lock()
		defer mu.Unlock()
		progress = append(progress, p.Message)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tools, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*sdk.Tool{}
	for _, tl := range tools.Tools {
		byName[tl.Name] = tl
	}
	for _, want := range []string{"cold-email-writer", "list_apps", "get_run", "get_balance", TestAppSlug} {
		if byName[want] == nil {
			t.Fatalf("tools %v lack %s", tools.Tools, want)
		}
	}
	cold := byName["cold-email-writer"]
	schema, _ := json.Marshal(cold.InputSchema)
	if !strings.Contains(cold.Description, "25 Credits") || !strings.Contains(string(schema), `"product_description"`) {
		t.Fatalf("cold-email-writer tool: %q %s", cold.Description, schema)
	}
	if byName["linkedin-post-writer"] != nil {
		t.Fatal("an App that needs a model is a tool without one")
	}

	res := CallTool(t, s, "cold-email-writer", map[string]any{"product_description": "Acme Ledger automates bookkeeping.",
		"target_role": "Agency founders"}, "progress-1")
	out := structured(t, res)
	emails, _ := out["output"].(map[string]any)["emails"].([]any)
	if res.IsError || out["status"] != "completed" || len(emails) != 3 {
		t.Fatalf("cold-email-writer tool: %+v", out)
	}
	mu.Lock()
	got := append([]string(nil), progress...)
	mu.Unlock()
	if len(got) < 3 || !strings.Contains(strings.Join(got, "|"), "Writing email") {
		t.Fatalf("progress notifications %q: want the run's steps", got)
	}
	runNo := out["run_no"].(string)
	if bal := structured(t, CallTool(t, s, "get_balance", nil, nil)); bal["balance"] != float64(75) {
		t.Fatalf("balance after a 25-Credit run: %v", bal)
	}
	// The same run in the API's history and through get_run.
	found := false
	for _, r := range h.Pages(a, "/api/v1/runs?limit=50") {
		found = found || r["run_no"] == runNo
	}
	if !found {
		t.Fatalf("run %s is not in the API's run history", runNo)
	}
	if r := structured(t, CallTool(t, s, "get_run", map[string]any{"run_no": runNo}, nil)); r["status"] != "completed" || r["output"] == nil {
		t.Fatalf("get_run: %v", r)
	}
	apps := structured(t, CallTool(t, s, "list_apps", nil, nil))
	if !strings.Contains(MustJSON(apps), `"slug":"cold-email-writer"`) || !strings.Contains(MustJSON(apps), `"credit_cost":25`) {
		t.Fatalf("list_apps: %v", apps)
	}
	// Another account's run is not found.
	other := h.Account(100)
	otherRun := h.Create(other, ColdEmailRun())
	if r := CallTool(t, s, "get_run", map[string]any{"run_no": otherRun}, nil); !r.IsError || !strings.Contains(MustJSON(r.StructuredContent), "run_not_found") {
		t.Fatalf("get_run of another account's run: %+v", r.StructuredContent)
	}
}

func TestMCPToolErrorsCarryTheAPICodes(t *testing.T) {
	h := Start(t, WithLimits(engine.Limits{CreatePerMinute: 2}))
	poor, rich := h.Account(10), h.Account(1000)
	sp, err := MCPConnect(t, h, poor.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	sr, err := MCPConnect(t, h, rich.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	valid := map[string]any{"product_description": "p", "target_role": "r"}
	output := toolOutputSchema(t, sr, "cold-email-writer")
	expect := func(s *sdk.ClientSession, args map[string]any, code, says string) {
		t.Helper()
		res := CallTool(t, s, "cold-email-writer", args, nil)
		e, _ := structured(t, res)["error"].(map[string]any)
		text := res.Content[0].(*sdk.TextContent).Text
		if !res.IsError || e["code"] != code || !strings.Contains(text, says) {
			t.Fatalf("result %v %q, want a tool error %s saying %q", e, text, code, says)
		}
		if (code == "rate_limited" || code == "concurrency_limit") && (e["retry_after_seconds"] == nil || e["limit"] == nil) {
			t.Fatalf("%s without retry_after_seconds or the limit's name: %v", code, e)
		}
		// A client checks a result against the tool's outputSchema, an
		// error too: the TypeScript SDK throws on a mismatch, and its
		// caller loses the code and the wait.
		if r := output.Validate(structured(t, res)); !r.IsValid() {
			t.Fatalf("the %s result does not match the tool's outputSchema: %v", code, r.Errors)
		}
	}
	expect(sp, valid, "insufficient_credits", "Credits")
	expect(sr, map[string]any{"product_description": "p", "cta_goal": "Sell hard"}, "invalid_input", "target_role")
	for range 2 { // the creation limit is 2 a minute
		if res := CallTool(t, sr, "cold-email-writer", valid, nil); res.IsError {
			t.Fatalf("create within the limit: %v", res.StructuredContent)
		}
	}
	expect(sr, valid, "rate_limited", "(retry after ")
	busy := Start(t, WithLimits(engine.Limits{CreatePerMinute: 100, OwnerActiveRuns: 1}))
	held := busy.Account(1000)
	sb, err := MCPConnect(t, busy, held.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	busy.Create(held, RunTestApp("hold"))
	expect(sb, valid, "concurrency_limit", "(retry after ")
	// The seconds are in the message: an MCP client sees no Retry-After header.
	if res := CallTool(t, sr, "cold-email-writer", valid, nil); strings.Contains(res.Content[0].(*sdk.TextContent).Text, "Retry-After") {
		t.Fatalf("the rate_limited text points at a header MCP clients never see: %q", res.Content[0].(*sdk.TextContent).Text)
	}
	if bal, _ := h.Balance(poor); bal != 10 {
		t.Fatalf("poor balance %d after a refused call, want 10", bal)
	}
	if bal, _ := h.Balance(rich); bal != 1000-2*25 {
		t.Fatalf("rich balance %d, want two runs charged and nothing for the refused calls", bal)
	}
}

func TestMCPRefusesMissingAndRevokedKeys(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	if _, err := MCPConnect(t, h, "", nil); err == nil {
		t.Fatal("connected without a key")
	}
	if _, err := MCPConnect(t, h, "ak_notakeyatall0000000000000000000", nil); err == nil {
		t.Fatal("connected with an unknown key")
	}
	s, err := MCPConnect(t, h, a.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if r := h.Do("DELETE", "/admin/v1/keys/"+a.KeyID, AdminToken, nil); r.Status != 204 {
		t.Fatalf("revoke: %d", r.Status)
	}
	if _, err := MCPConnect(t, h, a.Key, nil); err == nil || !strings.Contains(err.Error(), "401") && !strings.Contains(strings.ToLower(err.Error()), "unauthorized") {
		t.Fatalf("connected with a revoked key: %v", err)
	}
}

// An MCP client given a bad key (mcp-remote) probes OAuth discovery and
// client registration next. Those paths answer the JSON error envelope,
// saying apprun takes API keys, not the website's HTML 404 page.
func TestOAuthDiscoveryAnswersAJSONNotFound(t *testing.T) {
	h := Start(t)
	for _, probe := range []struct{ method, path string }{
		{"GET", "/.well-known/oauth-protected-resource"},
		{"GET", "/.well-known/oauth-protected-resource/mcp"},
		{"GET", "/.well-known/oauth-authorization-server"},
		{"GET", "/.well-known/openid-configuration"},
		{"POST", "/register"},
	} {
		r := h.Do(probe.method, probe.path, "", nil)
		if r.Status != 404 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || r.ErrorCode(t) != "not_found" {
			t.Fatalf("%s %s: %d %s %s", probe.method, probe.path, r.Status, r.Header.Get("Content-Type"), r.Body)
		}
		if msg := r.JSON(t)["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "OAuth") || !strings.Contains(msg, "API key") {
			t.Fatalf("%s %s: message %q does not say to use an API key", probe.method, probe.path, msg)
		}
	}
}

// The server says no more than it does: it sends no list-changed
// notifications, so it does not advertise them; and each App tool, whose
// results carry structured content, declares their schema with the App's
// output schema inside.
func TestMCPAdvertisesWhatItDoes(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	s, err := MCPConnect(t, h, a.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	caps := s.InitializeResult().Capabilities
	if caps.Tools == nil || caps.Tools.ListChanged {
		t.Fatalf("tools capability %+v: want tools without listChanged", caps.Tools)
	}
	tools, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name != "cold-email-writer" {
			continue
		}
		schema, _ := json.Marshal(tool.OutputSchema)
		var m map[string]any
		_ = json.Unmarshal(schema, &m)
		props, _ := m["properties"].(map[string]any)
		output, _ := props["output"].(map[string]any)
		if m["type"] != "object" || output["properties"].(map[string]any)["emails"] == nil {
			t.Fatalf("cold-email-writer outputSchema %s: want the run with the App's output schema (emails)", schema)
		}
		return
	}
	t.Fatal("no cold-email-writer tool")
}

// /mcp's own refusals (the SDK's transport: a GET, a message that is not
// JSON-RPC, an unsupported protocol version, another media type) answer
// in the API's error envelope, as every other surface's do, with the
// SDK's status and words.
func TestMCPTransportRefusalsAreTheErrorEnvelope(t *testing.T) {
	t.Parallel()
	h := Start(t)
	a := h.Account(100)
	acc := []string{"Accept", "application/json, text/event-stream"}
	for _, tc := range []struct {
		name, method string
		body         any
		hdr          []string
		status       int
		code, words  string
	}{
		{"a GET (no server stream)", "GET", nil, acc, 405, "method_not_allowed", "Method Not Allowed"},
		{"a DELETE (no sessions)", "DELETE", nil, acc, 405, "method_not_allowed", "Method Not Allowed"},
		{"JSON that is not JSON-RPC", "POST", `{"a":1}`, acc, 400, "invalid_request", "malformed payload"},
		{"cut-short JSON", "POST", `{"jsonrpc":`, acc, 400, "invalid_request", "malformed payload"},
		{"an unsupported protocol version", "POST", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			append([]string{"Mcp-Protocol-Version", "1999-01-01"}, acc...), 400, "invalid_request", "Unsupported protocol version"},
		{"text/plain", "POST", RawBody(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "text/plain"), acc, 415, "invalid_request", "Content-Type"},
	} {
		r := h.Do(tc.method, "/mcp", a.Key, tc.body, tc.hdr...)
		if r.Status != tc.status || r.ErrorCode(t) != tc.code || !strings.Contains(string(r.Body), tc.words) {
			t.Errorf("%s: %d %q %s, want %d %s saying %q", tc.name, r.Status, r.Header.Get("Content-Type"), r.Body, tc.status, tc.code, tc.words)
		}
	}
	// What the SDK answers well is untouched.
	r := h.Do("POST", "/mcp", a.Key, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, acc...)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"tools"`) {
		t.Fatalf("tools/list: %d %s", r.Status, r.Body)
	}
}

// A JSON-RPC batch is refused: one HTTP request of 1 MiB carried 9,500
// tool calls (1.8 s of the node's work) and counted once against the
// key's read limit, 120 a minute, so one key could keep several cores
// busy. MCP removed batching in 2025-06-18 (the SDK refuses a batch that
// says so); a client of 2025-03-26 that sent one learns to send its
// messages one by one.
func TestMCPRefusesABatch(t *testing.T) {
	t.Parallel()
	h := Start(t)
	a := h.Account(100)
	acc := []string{"Accept", "application/json, text/event-stream"}
	call := `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"cold-email-writer","arguments":{"product_description":"Acme","target_role":"Founders"}}}`
	for _, body := range []string{
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
		" \n[" + fmt.Sprintf(call, 1) + "]",
		"[" + fmt.Sprintf(call, 1) + "," + fmt.Sprintf(call, 2) + "]",
	} {
		r := h.Do("POST", "/mcp", a.Key, body, acc...)
		if r.Status != 400 || r.ErrorCode(t) != "invalid_request" || !strings.Contains(string(r.Body), "batch") {
			t.Errorf("batch %.60q: %d %s, want 400 invalid_request saying batches are not taken", body, r.Status, r.Body)
		}
	}
	if balance, active := h.Balance(a); balance != 100 || active != 0 {
		t.Errorf("after the refused batches: balance %d, %d active, want 100 and none", balance, active)
	}
	// One message, the way every client of 2025-06-18 and later sends.
	if r := h.Do("POST", "/mcp", a.Key, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, acc...); r.Status != 200 {
		t.Fatalf("a ping: %d %s", r.Status, r.Body)
	}
}
