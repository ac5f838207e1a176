package nodetest

import (
	"time"

	"github.com/apprun/apprun/llm"
	"github.com/apprun/apprun/llm/llmtest"
	"github.com/apprun/apprun/node"
)

// WithModel points the node at a fake OpenAI-compatible provider, with
// retries quick enough for a test.
func WithModel(fake *llmtest.Server) Option {
	return func(c *node.Config) {
		c.Model = llm.Config{BaseURL: fake.BaseURL(), APIKey: "sk-test", Model: "fake-model", MaxAttempts: 3, Backoff: 20 * time.Millisecond}
	}
}

// WithProvider points the node at a fake provider configured as
// docs/apps.md says for the provider it plays (Azure OpenAI's endpoint and
// api-version), asking for streamed replies or whole ones.
func WithProvider(fake *llmtest.Server, noStream bool) Option {
	return func(c *node.Config) {
		WithModel(fake)(c)
		c.Model.NoStream = noStream
		if fake.Profile.Azure {
			c.Model.Provider, c.Model.APIVersion = llm.ProviderAzure, llmtest.APIVersion
		}
	}
}

const ModelSequence = `{"emails":[` +
	`{"touch":1,"send_day":0,"angle":"opener","subject":"month-end at your agency","body":"Hi {{first_name}}, model-written opener."},` +
	`{"touch":2,"send_day":4,"angle":"proof","subject":"one day, not five","body":"Model-written proof."},` +
	`{"touch":3,"send_day":9,"angle":"breakup","subject":"closing the loop","body":"Model-written close."}]}`

// FailedWith checks a run failed with code and was refunded in full.
func (h *Harness) FailedWith(a Account, runNo, code string, credits int64) {
	h.T.Helper()
	evs := h.Collect(a, runNo)
	last := evs[len(evs)-1]
	errObj, _ := last.Data["error"].(map[string]any)
	if last.Event != "failed" || errObj["code"] != code {
		h.T.Fatalf("run %s ended with %s %v, want failed with %s", runNo, last.Event, last.Data, code)
	}
	if bal, active := h.Balance(a); bal != credits || active != 0 {
		h.T.Fatalf("balance %d (%d active) after the failure, want all %d back", bal, active, credits)
	}
}

func WithSourcesAllowPrivate() Option { return func(c *node.Config) { c.SourcesAllowPrivate = true } }

// SourcePage is a page a source-reading App reads (a competitor's
// pricing), and MetaTagsReply what a model writes for it as
// meta-tags-from-page.
const SourcePage = `<!doctype html><html><head><title>Pricing · Rival</title></head><body>
<article><h1>Pricing</h1><p>Starter costs $29 a month for one user and includes invoicing, receipts and bank sync for small teams.</p>
<p>Team costs $99 a month for five users, with approvals, roles and a priority support line that answers within a day.</p></article></body></html>`

const MetaTagsReply = `{"title_options":["Pricing · Rival","Rival pricing","Plans and prices"],"meta_description_options":["Starter $29, Team $99.","Plans for small teams."],` +
	`"og_title":"Rival pricing","og_description":"Starter and Team plans.","html":"<title>Pricing · Rival</title>"}`
