package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/httpapi"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service"
	"github.com/apprun/apprun/service/live"
	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Engine is what the MCP surface needs of the domain.
type Engine interface {
	Catalog() *engine.Catalog
	CreateRun(ctx context.Context, req service.CreateRunRequest) (service.CreatedRun, error)
	Watch(ctx context.Context, runNo string, after uint64, idle time.Duration,
		send func([]live.StreamEvent) (bool, error), quiet func(uint64) (bool, error)) error
}

// Reads is what it reads: the projections.
type Reads interface {
	Account(id string) (ledger.Account, error)
	Run(runNo string) (engine.Run, error)
	Price(slug string) (engine.Price, error)
	WaitFor(ctx context.Context, seq uint64) error
}

// Config configures the MCP surface.
type Config struct {
	Engine Engine
	Reads  Reads
	// Wait is how long an App tool call waits for its run to end before it
	// returns the run_no to fetch later (default 10 minutes).
	Wait    time.Duration
	Version string
	Logger  *slog.Logger
}

// caller is the key a request authenticated with.
type caller struct{ AccountID, KeyID string }

// New returns the /mcp handler: a stateless Streamable HTTP server, so any
// node answers any request. It must sit behind httpapi.RequireKey, which
// authenticates and counts every request.
func New(cfg Config) (http.Handler, error) {
	if cfg.Engine == nil || cfg.Reads == nil {
		return nil, errors.New("mcp: Engine and Reads are required")
	}
	if cfg.Wait <= 0 {
		cfg.Wait = 10 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &surface{cfg: cfg}
	h := sdk.NewStreamableHTTPHandler(s.server, &sdk.StreamableHTTPOptions{Stateless: true, Logger: cfg.Logger})
	return oneMessage(auth.RequireBearerToken(s.verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)), nil
}

type surface struct{ cfg Config }

// verify hands the SDK the caller the edge authenticated
// (httpapi.RequireKey, in front of this handler): the key check is the REST
// API's, not one of this package's.
func (s *surface) verify(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
	c, ok := httpapi.CallerOf(r.Context())
	if !ok {
		return nil, fmt.Errorf("%w: not authenticated by the edge", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{UserID: c.AccountID, Extra: map[string]any{"key_id": c.KeyID}}, nil
}

func callerOf(req *sdk.CallToolRequest) (caller, bool) {
	if req.Extra == nil || req.Extra.TokenInfo == nil {
		return caller{}, false
	}
	keyID, _ := req.Extra.TokenInfo.Extra["key_id"].(string)
	return caller{AccountID: req.Extra.TokenInfo.UserID, KeyID: keyID}, keyID != ""
}

// server builds the server for one request: the tools as the catalog and
// prices are now.
func (s *surface) server(*http.Request) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "apprun", Title: "apprun: marketing Apps", Version: s.cfg.Version}, &sdk.ServerOptions{
		Instructions: "Each App tool runs a paid App: it charges the account's Credits when the run starts (refunded if the run fails) " +
			"and returns the App's output. list_apps shows Apps and prices, get_balance the Credits left, get_run a run by run_no.",
		// The server is stateless (one per request): it sends no
		// notifications, so it does not advertise list changes. A client
		// sees new prices in the descriptions on its next tools/list.
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: false}},
	})
	srv.AddTool(&sdk.Tool{Name: "list_apps", Description: "List the Apps you can run, with their prices in Credits.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)}, s.listApps)
	srv.AddTool(&sdk.Tool{Name: "get_balance", Description: "The account's Credits balance and active runs.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)}, s.getBalance)
	srv.AddTool(&sdk.Tool{Name: "get_run", Description: "A run's status, and its output once it has finished.",
		InputSchema: json.RawMessage(`{"type":"object","required":["run_no"],"additionalProperties":false,` +
			`"properties":{"run_no":{"type":"string","description":"The run_no an App tool returned"}}}`)}, s.getRun)
	for _, a := range s.cfg.Engine.Catalog().Runnable() {
		srv.AddTool(&sdk.Tool{Name: a.Slug, Title: a.Name, Description: s.describe(a), InputSchema: a.InputSchema,
			OutputSchema: runOutputSchema(a.OutputSchema)}, s.runApp(a.Slug))
	}
	return srv
}

// runOutputSchema is the schema of an App tool's structured result: the
// run, with the App's output once it has completed (runResult), or a
// refusal's error alone (toolError). Clients check a result against it,
// an isError one too (the TypeScript SDK throws on a mismatch, and the
// caller would lose the refusal's code and wait), so it admits both.
func runOutputSchema(output json.RawMessage) json.RawMessage {
	if len(output) == 0 {
		output = json.RawMessage(`{}`)
	}
	return json.RawMessage(`{"type":"object","properties":{` +
		`"run_no":{"type":"string"},"app_slug":{"type":"string"},` +
		`"status":{"type":"string","enum":["queued","running","completed","failed"]},` +
		`"credit_cost":{"type":"integer"},"summary":{"type":"string"},"output":` + string(output) + `,` +
		`"error":{"type":"object","required":["code","message"],"properties":{"code":{"type":"string"},"message":{"type":"string"},` +
		`"retry_after_seconds":{"type":"integer","description":"refusals that pass: seconds to wait before calling again"},` +
		`"limit":{"type":"string","description":"the limit a rate_limited or concurrency_limit refusal hit"},` +
		`"details":{"type":"string","description":"a failed run's technical account: the provider's or the output check's own text"}}},` +
		`"refunded_credits":{"type":"integer"}},` +
		`"anyOf":[{"required":["run_no","app_slug","status","credit_cost"]},{"required":["error"]}]}`)
}

// describe is an App tool's description, with the current price.
func (s *surface) describe(a *engine.App) string {
	price := "It has no price yet, so it cannot run now."
	if p, err := s.cfg.Reads.Price(a.Slug); err == nil && p.CreditCost > 0 && !p.Recalibrating {
		price = fmt.Sprintf("Price: %d Credits a run, charged when it starts and refunded if it fails.", p.CreditCost)
	}
	if a.Category != "" {
		return "[" + a.Category + "] " + a.Description + " " + price
	}
	return a.Description + " " + price
}

// toolError is a tool result that carries the Run API's error code.
func toolError(err error) *sdk.CallToolResult {
	var e *engine.Error
	if !errors.As(err, &e) {
		e = &engine.Error{Code: engine.CodeInternal, Message: "the request could not be completed; nothing was charged"}
	}
	body := map[string]any{"code": string(e.Code), "message": e.Message}
	if e.Limit != "" {
		body["limit"] = e.Limit
	}
	text := string(e.Code) + ": " + e.Message
	if e.RetryAfter > 0 {
		secs := int(e.RetryAfter.Round(time.Second).Seconds())
		body["retry_after_seconds"] = secs
		text += fmt.Sprintf(" (retry after %d s)", secs)
	}
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: text}},
		StructuredContent: map[string]any{"error": body}}
}

func jsonResult(text string, v any) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}, StructuredContent: v}
}

// reader is the caller of a read tool (the edge counted the request
// against the key's read limit).
func (s *surface) reader(_ context.Context, req *sdk.CallToolRequest) (caller, *sdk.CallToolResult) {
	c, ok := callerOf(req)
	if !ok {
		return c, toolError(engine.Errorf(engine.CodeUnauthorized, "missing API key"))
	}
	return c, nil
}

func (s *surface) listApps(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	if _, fail := s.reader(ctx, req); fail != nil {
		return fail, nil
	}
	var list []map[string]any
	var lines []string
	for _, a := range s.cfg.Engine.Catalog().Runnable() {
		item := map[string]any{"slug": a.Slug, "name": a.Name, "description": a.Description, "credit_cost": nil}
		cost := "not priced yet"
		if p, err := s.cfg.Reads.Price(a.Slug); err == nil && p.CreditCost > 0 && !p.Recalibrating {
			item["credit_cost"], cost = p.CreditCost, fmt.Sprintf("%d Credits", p.CreditCost)
		}
		list = append(list, item)
		lines = append(lines, fmt.Sprintf("%s (%s): %s", a.Slug, cost, a.Description))
	}
	return jsonResult(strings.Join(lines, "\n"), map[string]any{"apps": list}), nil
}

func (s *surface) getBalance(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	c, fail := s.reader(ctx, req)
	if fail != nil {
		return fail, nil
	}
	a, err := s.cfg.Reads.Account(c.AccountID)
	if err != nil {
		return toolError(err), nil
	}
	return jsonResult(fmt.Sprintf("%d Credits, %d run(s) active", a.Balance, a.Active),
		map[string]any{"balance": a.Balance, "active_runs": a.Active}), nil
}

func (s *surface) getRun(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	c, fail := s.reader(ctx, req)
	if fail != nil {
		return fail, nil
	}
	var args struct {
		RunNo string `json:"run_no"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &args); err != nil || args.RunNo == "" {
		return toolError(engine.Errorf(engine.CodeInvalidInput, "run_no: a run number is required")), nil
	}
	r, err := s.cfg.Reads.Run(args.RunNo)
	if errors.Is(err, port.ErrNotFound) || (err == nil && r.AccountID != c.AccountID) {
		return toolError(engine.Errorf(engine.CodeRunNotFound, "no run %q", args.RunNo)), nil
	}
	if err != nil {
		return toolError(err), nil
	}
	return runResult(r), nil
}

// runResult is a run as a tool result.
func runResult(r engine.Run) *sdk.CallToolResult {
	out := map[string]any{"run_no": r.RunNo, "app_slug": r.AppSlug, "status": string(r.Status), "credit_cost": r.CreditCost}
	text := fmt.Sprintf("Run %s is %s.", r.RunNo, r.Status)
	switch r.Status {
	case engine.StatusCompleted:
		// Raw: the members in the order the App's schema declares them.
		out["summary"], out["output"] = r.Summary, r.Output
		text = r.Summary + "\n\n" + string(r.Output)
	case engine.StatusFailed:
		out["error"], out["refunded_credits"] = r.Error, r.Refunded
		res := jsonResult(fmt.Sprintf("Run %s failed (%s). %s %d Credits were refunded.", r.RunNo, r.Error.Code, r.Error.Sentence(), r.Refunded), out)
		res.IsError = true
		return res
	default:
		text += " Call get_run with this run_no later for its output."
	}
	return jsonResult(text, out)
}
