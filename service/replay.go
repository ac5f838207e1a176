package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/apprun/apprun/engine"
)

// A replay runs the App's current definition against a run's record: the
// recorded model replies and source reads are served in order, so no
// model, no network and no ledger is touched. It says whether the run
// would do the same today: every call made as recorded (the messages sent
// to the model, the sources read) and the same outcome (the output and
// summary byte for byte, or the same failure), and where it first differs.

// ReplayReport is what a replay found.
type ReplayReport struct {
	RunNo   string `json:"run_no"`
	AppSlug string `json:"app_slug"`
	// RecordedVersion is the App definition the run had; CurrentVersion
	// the one replayed.
	RecordedVersion string `json:"recorded_version"`
	CurrentVersion  string `json:"current_version"`
	// Identical: every recorded call was made again as recorded, and the
	// outcome is the same, byte for byte.
	Identical bool `json:"identical"`
	// Outcome is the run's recorded outcome, Replayed the replay's
	// ("completed", or "failed: <code>").
	Outcome  string `json:"outcome"`
	Replayed string `json:"replayed"`
	// Calls is how many recorded model calls and source reads were served.
	Calls int `json:"calls"`
	// Note says what could not be compared (a canceled run has no outcome
	// past its last step).
	Note string `json:"note,omitempty"`
	// FirstDifference is where the replay first differs from the record.
	FirstDifference *Difference `json:"first_difference,omitempty"`
}

// Difference is where two JSON documents first differ: the member's path,
// and for text the byte offset and an excerpt of each side around it.
type Difference struct {
	Path     string `json:"path"`
	Offset   *int   `json:"offset,omitempty"`
	Recorded string `json:"recorded"`
	Replayed string `json:"replayed"`
}

// ReplayRun replays one run (any account's: the operator's).
func (s *Service) ReplayRun(ctx context.Context, runNo string) (ReplayReport, error) {
	rec, err := s.runRecord(ctx, runNo)
	if err != nil {
		return ReplayReport{}, err
	}
	return s.Replay(ctx, rec)
}

// Replay replays a run's record document (read from the log, or an
// exported one) with this node's App definitions.
func (s *Service) Replay(ctx context.Context, rec RunRecord) (ReplayReport, error) {
	return ReplayRecord(ctx, s.replayCatalog(), rec)
}

func (s *Service) replayCatalog() *engine.Catalog {
	if s.cfg.ReplayCatalog != nil {
		return s.cfg.ReplayCatalog
	}
	return s.cfg.Catalog
}

// ReplayRecord replays rec with the Apps of catalog.
func ReplayRecord(ctx context.Context, catalog *engine.Catalog, rec RunRecord) (ReplayReport, error) {
	rep := ReplayReport{RunNo: rec.Run.RunNo, AppSlug: rec.Head.AppSlug, RecordedVersion: rec.Head.AppVersion, Outcome: outcomeOf(rec.Run)}
	app, err := catalog.Lookup(rec.Head.AppSlug)
	if err != nil || app.Executor == nil {
		return rep, engine.Errorf(engine.CodeAppNotFound, "App %q cannot be replayed here: it is not in this node's catalog", rec.Head.AppSlug)
	}
	rep.CurrentVersion = app.Version
	if len(rec.Steps) == 0 || rec.Steps[0].Kind != engine.RecordStart {
		return rep, engine.Errorf(engine.CodeInvalidRequest, "run %s has no record to replay (it was made with recording off, or never started)", rec.Run.RunNo)
	}
	job := engine.Job{RunNo: rec.Run.RunNo, AppSlug: app.Slug, Model: rec.Model}
	if err := json.Unmarshal(rec.Head.Input, &job.Input); err != nil {
		return rep, engine.Errorf(engine.CodeInvalidRequest, "run %s: its recorded input is not a JSON object", rec.Run.RunNo)
	}
	recorded := make([]engine.RecordEntry, len(rec.Steps))
	for i, st := range rec.Steps {
		recorded[i] = st.RecordEntry
	}
	var replayed []engine.RecordEntry
	job.Replay = recorded
	job.Record = func(e engine.RecordEntry) { replayed = append(replayed, e) }
	// The App's timeout bounds a replay too (it never waits on a call).
	rctx, cancel := context.WithTimeout(ctx, app.Timeout)
	defer cancel()
	res, runErr := app.Executor(rctx, job, func(engine.Step) {})
	if ctx.Err() != nil {
		return rep, ctx.Err()
	}
	var out json.RawMessage
	if runErr == nil {
		if out, err = json.Marshal(res.Output); err != nil {
			runErr = err
		}
	}
	notRecorded := errors.Is(runErr, engine.ErrNotRecorded)
	replayedRun := engine.Run{Status: engine.StatusCompleted, Summary: res.Summary, Output: out}
	if runErr != nil {
		replayedRun = engine.Run{Status: engine.StatusFailed, Error: failure(runErr, app.Timeout)}
	}
	rep.Replayed = outcomeOf(replayedRun)
	for _, e := range replayed {
		if e.Kind != engine.RecordStart {
			rep.Calls++
		}
	}
	if notRecorded {
		rep.Replayed = "stopped: " + runErr.Error()
	}
	// The calls, in order, then the outcome. A run stopped from outside
	// (its owner, crashes, its deadline) or not ended has only its steps
	// to compare, and a replay runs past the last one (or stops for want
	// of a call): its calls are compared as far as the record goes.
	code := ""
	if rec.Run.Error != nil {
		code = rec.Run.Error.Code
	}
	ended := code == engine.FailCanceled || code == engine.FailInterrupted || code == engine.FailTimeout
	running := rec.Run.Status != engine.StatusCompleted && rec.Run.Status != engine.StatusFailed
	switch {
	case ended:
		rep.Note = "the run ended with " + code + "; its recorded steps are compared, not its outcome"
	case running:
		rep.Note = "the run has not ended; its recorded steps are compared"
	}
	if ended || running {
		replayed = prefix(replayed, len(recorded))
	}
	rep.FirstDifference = firstDifference("steps", comparableSteps(recorded), comparableSteps(replayed))
	if rep.FirstDifference == nil && !ended && !running {
		rep.FirstDifference = firstDifference("outcome", comparableOutcome(rec.Run), comparableOutcome(replayedRun))
	}
	rep.Identical = rep.FirstDifference == nil
	return rep, nil
}

func prefix(entries []engine.RecordEntry, n int) []engine.RecordEntry {
	return entries[:min(n, len(entries))]
}

func outcomeOf(r engine.Run) string {
	switch {
	case r.Status == engine.StatusFailed && r.Error != nil:
		return "failed: " + r.Error.Code
	case r.Status == "":
		return "not created"
	}
	return string(r.Status)
}

// comparableSteps are the parts of entries a definition decides: for a
// model call its step, messages and parameters; for a source read the
// address asked; for the start, which steps. Times, replies and content
// are the record's own, served back.
func comparableSteps(entries []engine.RecordEntry) any {
	out := make([]map[string]any, 0, len(entries))
	for _, e := range entries {
		m := map[string]any{"kind": e.Kind}
		switch e.Kind {
		case engine.RecordStart:
			m["with_model"] = e.WithModel != nil && *e.WithModel
		case engine.RecordModel:
			m["step"], m["messages"] = e.Step, e.Messages
			if e.Params != nil {
				m["temperature"], m["schema_name"] = e.Params.Temperature, e.Params.SchemaName
			}
		case engine.RecordSource:
			m["url"] = e.URL
		}
		out = append(out, m)
	}
	return out
}

func comparableOutcome(r engine.Run) any {
	m := map[string]any{"status": r.Status}
	if r.Status == engine.StatusCompleted {
		// As JSON values: member order is not a difference (a run from
		// before outputs kept their schema's order replays identical).
		m["summary"], m["output"] = r.Summary, r.Output
	}
	if r.Error != nil {
		// The code, not the words: a message is how this version of
		// apprun says what happened (worded anew in 2026-12), and what
		// the run sent and got is compared step by step.
		m["error"] = map[string]any{"code": r.Error.Code}
	}
	return m
}

// firstDifference walks a and b (as JSON values) in order and says where
// they first differ, nil when they do not.
func firstDifference(path string, a, b any) *Difference {
	return diffJSON(path, normalise(a), normalise(b))
}

func normalise(v any) any {
	data, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(data, &out)
	return out
}

func diffJSON(path string, a, b any) *Difference {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			break
		}
		for _, k := range unionKeys(av, bv) {
			if d := diffJSON(path+"."+k, av[k], bv[k]); d != nil {
				return d
			}
		}
		return nil
	case []any:
		bv, ok := b.([]any)
		if !ok {
			break
		}
		for i := range max(len(av), len(bv)) {
			var x, y any = missing{}, missing{}
			if i < len(av) {
				x = av[i]
			}
			if i < len(bv) {
				y = bv[i]
			}
			if d := diffJSON(fmt.Sprintf("%s[%d]", path, i), x, y); d != nil {
				return d
			}
		}
		return nil
	case string:
		if bv, ok := b.(string); ok {
			if av == bv {
				return nil
			}
			i := 0
			for i < len(av) && i < len(bv) && av[i] == bv[i] {
				i++
			}
			return &Difference{Path: path, Offset: &i, Recorded: excerpt(av, i), Replayed: excerpt(bv, i)}
		}
	}
	if scalar(a) && scalar(b) && a == b {
		return nil
	}
	return &Difference{Path: path, Recorded: show(a), Replayed: show(b)}
}

// missing stands for an array member one side lacks.
type missing struct{}

func isMissing(v any) bool { _, ok := v.(missing); return ok }

// scalar: v is comparable with == (not an object or an array).
func scalar(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return false
	}
	return true
}

func show(v any) string {
	if isMissing(v) {
		return "(none)"
	}
	b, _ := json.Marshal(v)
	return excerpt(string(b), 0)
}

// excerpt is up to 60 bytes of s from 20 before at, on rune edges.
func excerpt(s string, at int) string {
	from := max(0, at-20)
	to := min(len(s), from+80)
	for from > 0 && from < len(s) && s[from]&0xC0 == 0x80 {
		from--
	}
	for to < len(s) && s[to]&0xC0 == 0x80 {
		to++
	}
	out := s[from:to]
	if from > 0 {
		out = "…" + out
	}
	if to < len(s) {
		out += "…"
	}
	return out
}

func unionKeys(a, b map[string]any) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
