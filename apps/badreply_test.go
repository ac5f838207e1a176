package apps

import (
	"errors"
	"testing"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/llm/llmtest"
)

// For every App that calls the model: a reply that is not JSON, or JSON
// outside the App's output schema, fails the run with
// model_reply_invalid (the engine refunds every failed run).
func TestEveryAppRefusesAReplyThatIsNotItsOutput(t *testing.T) {
	gh := fakeGitHub(t)
	for slug, d := range shippedDefinitions(t) {
		if !d.NeedsModel && len(d.WithoutModel) == 0 {
			continue
		}
		for _, reply := range []string{"Sure! Here is your content.", `{"unexpected":true}`} {
			t.Run(slug, func(t *testing.T) {
				fake := llmtest.New()
				defer fake.Close()
				for range 5 { // as many as the step may ask
					fake.Script(llmtest.Reply{Text: reply})
				}
				_, _, err := run(t, withModel(t, fake, gh.URL), slug, d.Examples[0].Input, nil)
				var re *engine.RunError
				if !errors.As(err, &re) || re.Code != engine.FailModelReply {
					t.Fatalf("reply %q: %v, want %s", reply, err, engine.FailModelReply)
				}
			})
		}
	}
}
