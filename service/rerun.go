package service

import (
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/apprun/apprun/engine"
)

// A rerun is a new run made from another run of the same account: its
// input (with members changed, when the request gives some) and its
// brand context, optionally with another model. It is charged at today's
// price like any run, under every check and limit of a create, and names
// the run it reruns (rerun_of) and what it changed.

// RerunRequest asks to rerun RunNo.
type RerunRequest struct {
	AccountID, KeyID, RunNo string
	// Model, when set, is the model to ask instead of the node's.
	Model string
	// Input, when set, replaces these members of the run's input.
	Input          map[string]any
	IdempotencyKey string
	MaxCreditCost  *int64
}

// modelName is a model name a rerun may ask for.
var modelName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}$`)

// Rerun creates the rerun. A run of another account is run_not_found.
func (s *Service) Rerun(ctx context.Context, req RerunRequest) (CreatedRun, []string, error) {
	if req.Model != "" && !modelName.MatchString(req.Model) {
		return CreatedRun{}, nil, engine.Errorf(engine.CodeInvalidRequest, "model %q: want up to 128 letters, digits and . _ : / @ + -", req.Model)
	}
	switch {
	case req.Model != "" && len(s.cfg.Models) == 0:
		return CreatedRun{}, nil, engine.Errorf(engine.CodeInvalidRequest, "this service has no model provider: a rerun cannot choose a model")
	case req.Model != "" && !slices.Contains(s.cfg.Models, req.Model):
		return CreatedRun{}, nil, engine.Errorf(engine.CodeInvalidRequest, "model %q is not offered here; a rerun may ask for %s", req.Model, strings.Join(s.cfg.Models, ", "))
	}
	src, err := s.RunRecord(ctx, req.AccountID, req.RunNo)
	if err != nil {
		return CreatedRun{}, nil, err
	}
	var input map[string]any
	if err := json.Unmarshal(src.Head.Input, &input); err != nil {
		return CreatedRun{}, nil, internal("read the run's input", err)
	}
	var changes []string
	if req.Model != "" && req.Model != modelOf(src) {
		changes = append(changes, "model")
	}
	for _, k := range slices.Sorted(maps.Keys(req.Input)) {
		was, _ := json.Marshal(input[k])
		now, _ := json.Marshal(req.Input[k])
		if _, had := input[k]; !had || string(was) != string(now) {
			changes = append(changes, "input."+k)
		}
		input[k] = req.Input[k]
	}
	create := CreateRunRequest{AccountID: req.AccountID, KeyID: req.KeyID, AppSlug: src.Head.AppSlug, Input: input,
		MaxCreditCost: req.MaxCreditCost, IdempotencyKey: req.IdempotencyKey, Model: req.Model, RerunOf: req.RunNo, RerunChanges: changes}
	if src.BrandContextID != "" {
		id := src.BrandContextID
		create.BrandContextID = &id
	}
	run, err := s.CreateRun(ctx, create)
	return run, changes, err
}

// modelOf is the model a run's first model step asked (its request's
// model when it made no model call).
func modelOf(r RunRecord) string {
	for _, st := range r.Steps {
		if st.Kind == engine.RecordModel && st.Model != "" {
			return st.Model
		}
	}
	return r.Model
}

// Comparison is two runs of one App side by side (GET
// /api/v1/runs/{run_no}/compare?with=…).
type Comparison struct {
	AppSlug string          `json:"app_slug"`
	Runs    [2]ComparedRun  `json:"runs"`
	Input   []MemberCompare `json:"input"`
	Output  []MemberCompare `json:"output"`
	// Same* say whether each part is equal.
	SameInput   bool `json:"same_input"`
	SameModel   bool `json:"same_model"`
	SameOutput  bool `json:"same_output"`
	SameVersion bool `json:"same_app_version"`
}

// ComparedRun is one side of a comparison.
type ComparedRun struct {
	RunNo      string             `json:"run_no"`
	Status     engine.Status      `json:"status"`
	Error      *engine.RunError   `json:"error,omitempty"`
	Model      string             `json:"model,omitempty"`
	AppVersion string             `json:"app_version,omitempty"`
	RerunOf    string             `json:"rerun_of,omitempty"`
	CreditCost int64              `json:"credit_cost"`
	Refunded   int64              `json:"refunded_credits"`
	Tokens     *engine.TokenUsage `json:"tokens,omitempty"`
	// DurationMS is from its start to its end (nil until it ended).
	DurationMS *int64    `json:"duration_ms,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
}

// MemberCompare is one top-level member of an input or an output.
type MemberCompare struct {
	Member string          `json:"member"`
	Same   bool            `json:"same"`
	A      json.RawMessage `json:"a,omitempty"`
	B      json.RawMessage `json:"b,omitempty"`
}

// Compare compares two of an account's runs of the same App.
func (s *Service) Compare(ctx context.Context, accountID, runNo, with string) (Comparison, error) {
	if with == "" {
		return Comparison{}, engine.Errorf(engine.CodeInvalidRequest, "with: name the run to compare with (?with=run_…)")
	}
	a, err := s.RunRecord(ctx, accountID, runNo)
	if err != nil {
		return Comparison{}, err
	}
	b, err := s.RunRecord(ctx, accountID, with)
	if err != nil {
		return Comparison{}, err
	}
	if a.Head.AppSlug != b.Head.AppSlug {
		return Comparison{}, engine.Errorf(engine.CodeInvalidRequest, "runs of different Apps (%s, %s) cannot be compared", a.Head.AppSlug, b.Head.AppSlug)
	}
	c := Comparison{AppSlug: a.Head.AppSlug, Runs: [2]ComparedRun{compared(a), compared(b)}}
	c.Input, c.SameInput = compareMembers(a.Head.Input, b.Head.Input)
	c.Output, c.SameOutput = compareMembers(a.Run.Output, b.Run.Output)
	c.SameOutput = c.SameOutput && a.Run.Status == b.Run.Status
	c.SameModel = c.Runs[0].Model == c.Runs[1].Model
	c.SameVersion = a.Head.AppVersion == b.Head.AppVersion
	return c, nil
}

func compared(r RunRecord) ComparedRun {
	c := ComparedRun{RunNo: r.Run.RunNo, Status: r.Run.Status, Error: r.Run.Error, Model: modelOf(r), AppVersion: r.Head.AppVersion,
		RerunOf: r.RerunOf, CreditCost: r.Run.CreditCost, Refunded: r.Run.Refunded, Tokens: r.Tokens, CreatedAt: r.Run.CreatedAt}
	if r.Run.StartedAt != nil && r.Run.FinishedAt != nil {
		ms := r.Run.FinishedAt.Sub(*r.Run.StartedAt).Milliseconds()
		c.DurationMS = &ms
	}
	return c
}

// compareMembers lists the members of two JSON objects, sorted, each
// with both values; an absent side is left out.
func compareMembers(a, b json.RawMessage) ([]MemberCompare, bool) {
	var ma, mb map[string]json.RawMessage
	_ = json.Unmarshal(a, &ma)
	_ = json.Unmarshal(b, &mb)
	keys := map[string]bool{}
	for k := range ma {
		keys[k] = true
	}
	for k := range mb {
		keys[k] = true
	}
	out := []MemberCompare{}
	same := true
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		x, y := ma[k], mb[k]
		m := MemberCompare{Member: k, A: x, B: y, Same: SameJSON(x, y)}
		same = same && m.Same
		out = append(out, m)
	}
	return out, same
}

// SameJSON reports whether a and b are the same JSON value (member order
// and spacing aside); an absent or unreadable side is never the same.
func SameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
