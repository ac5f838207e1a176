package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/service"
	"github.com/apprun/apprun/service/live"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// runApp is an App's tool: it creates a run as POST /api/v1/runs does
// (same price lock, charge, limits and validation), sends the run's events
// as progress notifications, and returns the output, or, when the run
// outlasts Wait or the call, its run_no to fetch with get_run.
func (s *surface) runApp(slug string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		c, ok := callerOf(req)
		if !ok {
			return toolError(engine.Errorf(engine.CodeUnauthorized, "missing API key")), nil
		}
		input := map[string]any{}
		if len(req.Params.Arguments) > 0 {
			if err := json.Unmarshal(req.Params.Arguments, &input); err != nil || input == nil {
				return toolError(engine.Errorf(engine.CodeInvalidInput, "input: the arguments must be a JSON object")), nil
			}
		}
		created, err := s.cfg.Engine.CreateRun(ctx, service.CreateRunRequest{AccountID: c.AccountID, KeyID: c.KeyID, AppSlug: slug, Input: input})
		if err != nil {
			return toolError(err), nil
		}
		return s.follow(ctx, req, created.RunNo), nil
	}
}

// follow waits for the run's end, reporting progress, and returns it.
func (s *surface) follow(ctx context.Context, req *sdk.CallToolRequest, runNo string) *sdk.CallToolResult {
	wctx, cancel := context.WithTimeout(ctx, s.cfg.Wait)
	defer cancel()
	token := req.Params.GetProgressToken()
	notify := func(ev live.StreamEvent) {
		if token == nil {
			return
		}
		var d struct {
			Step, Steps int
			Message     string
		}
		_ = json.Unmarshal(ev.Data, &d)
		msg := d.Message
		if msg == "" {
			msg = string(ev.Type)
		}
		_ = req.Session.NotifyProgress(wctx, &sdk.ProgressNotificationParams{ProgressToken: token,
			Progress: float64(d.Step), Total: float64(d.Steps), Message: msg})
	}
	var terminal uint64
	err := s.cfg.Engine.Watch(wctx, runNo, 0, 5*time.Second, func(evs []live.StreamEvent) (bool, error) {
		for _, ev := range evs {
			if ev.Terminal {
				terminal = ev.Seq
				return true, nil
			}
			notify(ev)
		}
		return false, nil
	}, func(uint64) (bool, error) { return true, nil }) // read the log again when quiet
	if err == nil && terminal > 0 {
		return s.finished(ctx, runNo, terminal)
	}
	if err == nil { // the node is stopping
		err = context.Canceled
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		if r, rerr := s.cfg.Reads.Run(runNo); rerr == nil {
			return runResult(r) // still running: its run_no, to fetch later
		}
	}
	return toolError(err)
}

// finished returns the run once the read model shows its end.
func (s *surface) finished(ctx context.Context, runNo string, seq uint64) *sdk.CallToolResult {
	_ = s.cfg.Reads.WaitFor(ctx, seq)
	r, err := s.cfg.Reads.Run(runNo)
	if err != nil {
		return toolError(err)
	}
	return runResult(r)
}
