package web

import (
	"fmt"

	"github.com/apprun/apprun/engine"
)

// The run page says what a run is doing in one line, updated in place,
// above a short list of its steps: a step that reports again (the model
// writing, a wait for the provider) changes its line, not the list.
// static/site.js does the same with the events that follow.

// maxLiveSteps bounds the list.
const maxLiveSteps = 12

// liveSteps is a running run's step list, each step once, and the line.
func liveSteps(steps []engine.Step) ([]engine.Step, string) {
	var out []engine.Step
	now := ""
	for _, st := range steps {
		now = stepText(st)
		if st.Tool == engine.ToolWaitingForModel { // said on the line, not listed
			continue
		}
		if n := len(out); n > 0 && out[n-1].Tool == st.Tool {
			out[n-1] = st
			continue
		}
		out = append(out, st)
	}
	if len(out) > maxLiveSteps {
		out = out[len(out)-maxLiveSteps:]
	}
	return out, now
}

// stepText is a step as the page says it.
func stepText(st engine.Step) string {
	msg := st.Message
	if msg == "" {
		msg = st.Tool
	}
	if st.Total > 1 {
		return fmt.Sprintf("Step %d of %d: %s", st.Index, st.Total, msg)
	}
	return msg
}

// failure is a failed run as its page says it: what happened in words,
// and the code for a details line. The technical details (a provider's
// message, a parser's) are never shown on the website.
type failure struct {
	Words, Code string
}

// genericWords are what a failure says when its message is not written
// for people: runs failed before messages were (the parser's text), and
// execution failures, whose message is an error of the code.
var genericWords = map[string]string{
	engine.FailModelReply:       "The model's reply did not match what this App needs, even after it was asked to correct it.",
	engine.FailModelUnavailable: "The model provider did not answer, after several tries.",
	engine.FailModelRejected:    "The model provider refused the request.",
	engine.FailExecution:        "Something went wrong on our side while running it.",
}

func failureWords(e *engine.RunError) failure {
	words := e.Sentence()
	if g, ok := genericWords[e.Code]; ok && (e.Details == "" || e.Code == engine.FailExecution) {
		words = g // written before failures were worded, or the code's own error
	}
	if words == "" {
		words = "It failed."
	}
	return failure{Words: words, Code: e.Code}
}

// usageWords is a run's model usage as its page says it.
func usageWords(u *engine.RunUsage) string {
	calls := plural(u.ModelCalls, "model call", "model calls")
	if u.Tokens == nil {
		return calls + " (the provider reported no token counts)"
	}
	return fmt.Sprintf("%s, %s tokens (%s in, %s out)", calls, groupThousands(u.Tokens.Total), groupThousands(u.Tokens.Prompt),
		groupThousands(u.Tokens.Completion))
}
