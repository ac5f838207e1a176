package service

import (
	"context"
	"encoding/json"

	"github.com/apprun/apprun/engine"
)

// RunDetail is a run with what only its log holds: the input it was
// created with and each step it reported, kept after the run ends.
type RunDetail struct {
	Run   engine.Run
	Input json.RawMessage
	Steps []engine.Step
}

// RunDetail reads an account's run from its log. A run of another
// account is run_not_found, as on the API.
func (s *Service) RunDetail(ctx context.Context, accountID, runNo string) (RunDetail, error) {
	if !engine.ValidID(engine.PrefixRun, runNo) {
		return RunDetail{}, engine.Errorf(engine.CodeRunNotFound, "no run %q", runNo)
	}
	events, err := s.log.RunLog(ctx, runNo, 0)
	if err != nil {
		return RunDetail{}, internal("read run", err)
	}
	if len(events) == 0 || events[0].Event.Type != engine.RunCreated || events[0].Event.Created.AccountID != accountID {
		return RunDetail{}, engine.Errorf(engine.CodeRunNotFound, "no run %q", runNo)
	}
	var d RunDetail
	for _, le := range events {
		d.Run = engine.ApplyRun(d.Run, le.Event, le.Seq)
		switch {
		case le.Event.Type == engine.RunCreated:
			d.Input = le.Event.Created.Input
		case le.Event.Type == engine.ToolRunning && le.Event.ToolRun.Step != nil:
			// One line a step, with the message it began with: a step
			// that reports progress (a model writing) sends more, and a
			// retried progress write can land twice.
			if n := len(d.Steps); n > 0 && d.Steps[n-1].Index == le.Event.ToolRun.Step.Index && d.Steps[n-1].Tool == le.Event.ToolRun.Step.Tool {
				continue
			}
			d.Steps = append(d.Steps, *le.Event.ToolRun.Step)
		}
	}
	return d, nil
}
