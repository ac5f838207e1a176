package engine

// RunUsage is what a run's model calls used: every call it made (a
// repair, an execution interrupted and made again), the tokens as the
// provider reported them, in all and by step. It is folded from the
// run's recorded model calls (record.go).
type RunUsage struct {
	ModelCalls int `json:"model_calls"`
	// Tokens sums the calls' usage; nil when the provider reported none.
	Tokens *TokenUsage `json:"tokens,omitempty"`
	Steps  []StepUsage `json:"steps"`
}

// StepUsage is one step's share of a run's usage.
type StepUsage struct {
	Step       string      `json:"step"`
	ModelCalls int         `json:"model_calls"`
	Tokens     *TokenUsage `json:"tokens,omitempty"`
}

// add is u with one more model call of step, which used t (nil: not
// reported). u is not changed: a Run is a value, copied by ApplyRun's
// callers.
func (u *RunUsage) add(step string, t *TokenUsage) *RunUsage {
	out := &RunUsage{}
	if u != nil {
		out.ModelCalls, out.Tokens = u.ModelCalls, u.Tokens
		out.Steps = append([]StepUsage(nil), u.Steps...)
	}
	out.ModelCalls++
	out.Tokens = out.Tokens.plus(t)
	for i := range out.Steps {
		if out.Steps[i].Step == step {
			out.Steps[i].ModelCalls++
			out.Steps[i].Tokens = out.Steps[i].Tokens.plus(t)
			return out
		}
	}
	out.Steps = append(out.Steps, StepUsage{Step: step, ModelCalls: 1, Tokens: (*TokenUsage)(nil).plus(t)})
	return out
}

// plus is a + b, nil when both are.
func (a *TokenUsage) plus(b *TokenUsage) *TokenUsage {
	if b == nil {
		return a
	}
	out := TokenUsage{}
	if a != nil {
		out = *a
	}
	out.Prompt += b.Prompt
	out.Completion += b.Completion
	out.Total += b.Total
	return &out
}
