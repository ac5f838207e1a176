package service

import (
	"encoding/json"
	"testing"

	"github.com/apprun/apprun/engine"
)

// A replay compares the output as a JSON value: a run recorded before
// outputs kept their schema's member order (alphabetical) replays
// identical, and a changed value is still named.
func TestAReplayComparesOutputsAsValues(t *testing.T) {
	t.Parallel()
	run := func(out string) engine.Run {
		return engine.Run{Status: engine.StatusCompleted, Summary: "s", Output: json.RawMessage(out)}
	}
	recorded := run(`{"benefits":["b"],"hero":{"headline":"h","sub":"s"}}`)
	if d := firstDifference("outcome", comparableOutcome(recorded), comparableOutcome(run(`{"hero":{"sub":"s","headline":"h"},"benefits":["b"]}`))); d != nil {
		t.Fatalf("member order made a difference: %+v", d)
	}
	d := firstDifference("outcome", comparableOutcome(recorded), comparableOutcome(run(`{"hero":{"headline":"H","sub":"s"},"benefits":["b"]}`)))
	if d == nil || d.Path != "outcome.output.hero.headline" {
		t.Fatalf("a changed headline: %+v, want it named at outcome.output.hero.headline", d)
	}
}

// A failure is compared by its code: a run recorded before failures were
// worded for people replays identical, and another code is a difference.
func TestAReplayComparesAFailureByItsCode(t *testing.T) {
	t.Parallel()
	failed := func(code, msg string) engine.Run {
		return engine.Run{Status: engine.StatusFailed, Error: &engine.RunError{Code: code, Message: msg}}
	}
	old := failed(engine.FailModelReply, "the model's reply could not be used: it is not a JSON object (invalid character 'S')")
	if d := firstDifference("outcome", comparableOutcome(old), comparableOutcome(failed(engine.FailModelReply,
		"The model's reply was not the JSON object this App needs."))); d != nil {
		t.Fatalf("new words made a difference: %+v", d)
	}
	if d := firstDifference("outcome", comparableOutcome(old), comparableOutcome(failed(engine.FailModelUnavailable, "x"))); d == nil ||
		d.Path != "outcome.error.code" {
		t.Fatalf("another code: %+v, want it named at outcome.error.code", d)
	}
}
