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
