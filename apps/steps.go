package apps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/llm"
)

// executor runs a definition's steps for one run: the model steps when a
// model is configured, else the steps without one.
func (c *compiled) executor(env *Env) engine.Executor {
	return engine.Executor(func(ctx context.Context, job engine.Job, progress func(engine.Step)) (engine.Result, error) {
		sess := newSession(job)
		ctx = context.WithValue(ctx, sessionKey{}, sess)
		withModel := sess.withModel(env.Model != nil)
		job.BrandContext = sess.brandContext()
		now := time.Now().UTC()
		sess.record(engine.RecordEntry{Kind: engine.RecordStart, StartedAt: now, EndedAt: now, WithModel: &withModel, BrandContext: job.BrandContext})
		steps := c.def.Steps
		if !withModel && len(c.def.WithoutModel) > 0 {
			steps = c.def.WithoutModel
		}
		var blocks []dataBlock // what the model sees, in order
		blocks = append(blocks, dataBlock{tag: "input", about: "The user's input for this task:", value: job.Input})
		if job.BrandContext != nil && c.def.AcceptsBrandContext {
			blocks = append(blocks, dataBlock{tag: "brand_context", about: "The brand this is written for (use its voice, audience and facts):",
				value: brandData(job.BrandContext)})
		}
		var last any
		for i, s := range steps {
			report := func(st engine.Step) {
				if len(steps) > 1 {
					st.Index, st.Total = i+1, len(steps)
				}
				progress(st)
			}
			var err error
			if s.Tool != "" {
				if len(steps) > 1 {
					report(engine.Step{Tool: s.Name, Message: s.Message})
				}
				last, err = tools[s.Tool].run(ctx, env, job, s.Input, report)
				if err == nil {
					blocks = append(blocks, dataBlock{tag: s.Name, about: fmt.Sprintf("What the %s step found:", s.Name), value: last})
				}
			} else {
				report(engine.Step{Index: 1, Total: 1, Tool: s.Name, Message: s.Message})
				last, err = c.callModel(ctx, env, s, job, blocks, report)
			}
			if err != nil {
				return engine.Result{}, err
			}
		}
		out, err := c.checkOutput(last)
		if err != nil {
			return engine.Result{}, err
		}
		var summary strings.Builder
		if err := c.summaryFor(job.Input).Execute(&summary, summaryData{Input: job.Input, Output: out}); err != nil {
			return engine.Result{}, fmt.Errorf("summary: %w", err)
		}
		ordered, err := orderedJSON(out, c.shape)
		if err != nil {
			return engine.Result{}, fmt.Errorf("output: %w", err)
		}
		return engine.Result{Summary: strings.TrimSpace(summary.String()), Output: ordered}, nil
	})
}

// callModel asks the model for the step's output and returns it decoded,
// with the step's set fields, checked against the output schema. A reply
// that does not fit is sent back, with what is wrong with it, for a
// corrected one, as many times as the step's repairs say; the last that
// still does not fit fails the run with model_reply_invalid.
func (c *compiled) callModel(ctx context.Context, env *Env, s StepDef, job engine.Job, blocks []dataBlock, report func(engine.Step)) (any, error) {
	data := c.promptData(job.Input, job.BrandContext != nil && c.def.AcceptsBrandContext)
	var instructions strings.Builder
	if err := c.instructions[s.Name].Execute(&instructions, data); err != nil {
		return nil, fmt.Errorf("instructions: %w", err)
	}
	req := llm.Request{
		System:       systemMessage(instructions.String(), c.def.OutputSchema),
		User:         userMessage(blocks),
		SchemaName:   strings.ReplaceAll(c.def.Slug, "-", "_"),
		Schema:       c.def.OutputSchema,
		StrictSchema: c.strict,
		Temperature:  s.Model.Temperature,
	}
	repairs := s.Model.repairs()
	for repair := 0; ; repair++ {
		text, err := c.complete(ctx, env, s.Name, req, job.Model, report)
		if err != nil {
			return nil, err
		}
		reply, bad, err := c.readReply(text, s.Name, data)
		if err != nil || bad == nil {
			return reply, err
		}
		if repair == repairs {
			return nil, &engine.RunError{Code: engine.FailModelReply, Message: bad.words(), Details: bad.details}
		}
		report(engine.Step{Index: 1, Total: 1, Tool: engine.ToolRepairReply, Message: fmt.Sprintf(
			"The model's reply did not fit (%s): asking it to correct it (repair %d of %d)", bad.short(), repair+1, repairs)})
		reply1, _ := withinBound(text)
		req.Turns = append(req.Turns, llm.Turn{Role: "assistant", Content: reply1}, llm.Turn{Role: "user", Content: bad.repairMessage()})
	}
}

// readReply is the reply decoded, with the step's set fields, when it
// fits the output schema; else what is wrong with it. An error is the
// definition's own (a set template that fails).
func (c *compiled) readReply(text, step string, data promptData) (map[string]any, *badReply, error) {
	reply, bad := parseReply(text)
	if bad != nil {
		return nil, bad, nil
	}
	c.shape.dropNulls(reply) // a strict reply's null for a member it leaves out
	for k, st := range c.set[step] {
		var v strings.Builder
		if err := st.Execute(&v, data); err != nil {
			return nil, nil, fmt.Errorf("set.%s: %w", k, err)
		}
		reply[k] = v.String()
	}
	if res := c.output.Validate(reply); !res.IsValid() {
		return nil, &badReply{problems: replyProblems(res), details: errorList(res)}, nil
	}
	return reply, nil, nil
}

// complete makes one model call and records it: in a replay, the
// recorded call's reply, with no model called.
func (c *compiled) complete(ctx context.Context, env *Env, step string, req llm.Request, model string, report func(engine.Step)) (string, error) {
	req.Model = model
	sess := sessionOf(ctx)
	e := engine.RecordEntry{Kind: engine.RecordModel, Step: step, StartedAt: time.Now().UTC(),
		Params:   &engine.ModelParams{Temperature: req.Temperature, SchemaName: req.SchemaName},
		Messages: []engine.RecordMessage{{Role: "system", Content: req.System}, {Role: "user", Content: req.User}}}
	for _, t := range req.Turns {
		e.Messages = append(e.Messages, engine.RecordMessage{Role: t.Role, Content: t.Content})
	}
	for i := range e.Messages {
		var cut bool
		if i < 2 {
			e.Messages[i].Content, cut = withinBound(e.Messages[i].Content)
		} else {
			e.Messages[i].Content, cut = withinBytes(e.Messages[i].Content, turnBound)
		}
		e.Truncated = e.Truncated || cut
	}
	if sess.replaying() {
		rec, err := sess.next(engine.RecordModel)
		if err != nil {
			return "", err
		}
		// The step's temperature as the definition asks now (compared),
		// the rest as the run had it.
		e.Provider, e.Model = rec.Provider, rec.Model
		if rec.Params != nil {
			e.Params.JSONMode, e.Params.TemperatureNotSent = rec.Params.JSONMode, rec.Params.TemperatureNotSent
		}
		e.Reply, e.Bytes, e.Usage, e.Error, e.EndedAt = rec.Reply, rec.Bytes, rec.Usage, rec.Error, time.Now().UTC()
		sess.record(e)
		if rec.Error != nil {
			return "", replayError(rec.Error)
		}
		if rec.Reply == nil || int64(len(*rec.Reply)) != rec.Bytes {
			return "", fmt.Errorf("%w: the recorded reply of step %s is not whole (cut at the record's bound, or not the length it was recorded with)", engine.ErrNotRecorded, step)
		}
		return *rec.Reply, nil
	}
	sent := env.Model.Sent(req)
	e.Provider, e.Model, e.Params.JSONMode = sent.Provider, sent.Model, sent.JSONMode
	e.Params.TemperatureNotSent = req.Temperature != nil && sent.Temperature == nil
	reply, err := env.Model.Complete(ctx, req, c.watch(env, step, report))
	e.EndedAt = time.Now().UTC()
	if err != nil {
		err = modelFailure(err)
		e.Error = errorEntry(err)
	} else {
		e.Params.JSONMode = reply.JSONMode // auto may have fallen back
		text, cut := withinBound(reply.Text)
		e.Reply, e.Bytes, e.Truncated = &text, int64(len(reply.Text)), e.Truncated || cut
	}
	if reply.Usage != nil {
		e.Usage = &engine.TokenUsage{Prompt: reply.Usage.Prompt, Completion: reply.Usage.Completion, Total: reply.Usage.Total}
	}
	sess.record(e)
	return reply.Text, err
}

// checkOutput gives the last step's output as plain JSON values and checks
// it against the output schema (a tool's output too).
func (c *compiled) checkOutput(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	if res := c.output.Validate(out); !res.IsValid() {
		return nil, fmt.Errorf("the App's output does not match its output schema: %s", errorList(res))
	}
	return out, nil
}

// watch is what a model call reports on the run's stream: how much the
// model has written, at most every env.ProgressEvery, and each wait for
// another try, at most every env.WaitEvery.
func (c *compiled) watch(env *Env, step string, report func(engine.Step)) llm.Watch {
	var lastWrite, lastWait time.Time
	say := func(tool, msg string) { report(engine.Step{Index: 1, Total: 1, Tool: tool, Message: msg}) }
	return llm.Watch{
		Writing: func(chars int) {
			if now := time.Now(); now.Sub(lastWrite) >= env.ProgressEvery {
				lastWrite = now
				say(step, fmt.Sprintf("The model is writing: %d characters so far", chars))
			}
		},
		Waiting: func(w llm.Wait) {
			if now := time.Now(); lastWait.IsZero() || now.Sub(lastWait) >= env.WaitEvery {
				lastWait = now
				say(engine.ToolWaitingForModel, waitWords(w))
			}
		},
	}
}

// waitWords is a wait in words: "Waiting for the model: attempt 2 of 5,
// retrying in 3 s (the provider answered 500)".
func waitWords(w llm.Wait) string {
	why := "the connection to the provider failed"
	switch {
	case w.Status == 429:
		why = "the provider is busy: 429, too many requests"
	case w.Status != 0:
		why = fmt.Sprintf("the provider answered %d", w.Status)
	}
	return fmt.Sprintf("Waiting for the model: attempt %d of %d, retrying in %s (%s)", w.Attempt, w.Of, llm.Duration(w.In), why)
}

// modelFailure maps a failed completion to the run's failure: what
// happened in words, what the client saw in details.
func modelFailure(err error) error {
	var le *llm.Error
	if !errors.As(err, &le) {
		return err // the run's deadline or the node stopping
	}
	code := engine.FailModelReply
	switch le.Kind {
	case llm.Unavailable:
		code = engine.FailModelUnavailable
	case llm.Rejected:
		code = engine.FailModelRejected
	}
	return &engine.RunError{Code: code, Message: le.Words(), Details: le.Details()}
}
