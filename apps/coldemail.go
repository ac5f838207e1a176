package apps

import (
	"context"
	"fmt"
	"time"

	"github.com/apprun/apprun/engine"
)

// ColdEmailSlug is the slug of the cold email writer.
const ColdEmailSlug = "cold-email-writer"

// coldEmailSchema is the spec's input table as JSON Schema 2020-12, with our
// defaults and maximum lengths.
const coldEmailSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["product_description", "target_role"],
  "additionalProperties": false,
  "properties": {
    "product_description": {"type": "string", "minLength": 1, "maxLength": 2000, "description": "What the product is"},
    "target_role": {"type": "string", "minLength": 1, "maxLength": 500, "description": "Role, company type, and why them"},
    "value_proposition": {"type": "string", "maxLength": 1000, "description": "The specific problem solved for people like them"},
    "proof_points": {"type": "string", "maxLength": 4000, "description": "A result, case or credibility signal"},
    "research_signals": {"type": "string", "maxLength": 4000, "description": "Own notes on the prospect: funding, hiring, posts, tech changes"},
    "cta_goal": {"type": "string", "enum": ["Interest check", "Meeting", "Introduction"], "default": "Interest check", "description": "What a reply means"},
    "sequence_emails": {"type": "string", "enum": ["3 emails", "4 emails", "5 emails"], "default": "3 emails", "description": "Total number of touches"},
    "sender_context": {"type": "string", "maxLength": 300, "description": "Who signs the emails"},
    "interaction_language": {"type": "string", "enum": ["English", "Chinese"], "default": "English", "description": "Language of the generated report"}
  }
}`

// Brief is the cold email writer's input, decoded, with the brand context.
type Brief struct {
	ProductDescription string
	TargetRole         string
	ValueProposition   string
	ProofPoints        string
	ResearchSignals    string
	CTAGoal            string
	Emails             int
	SenderContext      string
	Language           string
	Brand              *engine.BrandContext
}

// Email is one touch of the sequence.
type Email struct {
	Touch   int    `json:"touch"`
	SendDay int    `json:"send_day"`
	Angle   string `json:"angle"`
	Subject string `json:"subject"`
	Body    string `json:"body"`
}

// Sequence is the cold email writer's output.
type Sequence struct {
	Language string  `json:"language"`
	CTAGoal  string  `json:"cta_goal"`
	Emails   []Email `json:"emails"`
}

// Writer writes a sequence from a brief. The built-in writer is the default;
// a model-backed writer plugs in here.
type Writer interface {
	Write(ctx context.Context, b Brief, progress func(engine.Step)) (Sequence, error)
}

// ColdEmailWriter is the cold-email-writer App writing with w.
func ColdEmailWriter(w Writer) engine.App {
	return engine.App{
		Slug:                ColdEmailSlug,
		Name:                "Cold Email Writer",
		Description:         "Writes B2B cold emails and follow-up sequences.",
		Price:               25,
		Timeout:             900 * time.Second,
		Retention:           30 * 24 * time.Hour,
		AcceptsBrandContext: true,
		Runnable:            true,
		InputSchema:         []byte(coldEmailSchema),
		Executor: engine.ExecutorFunc(func(ctx context.Context, job engine.Job, progress func(engine.Step)) (engine.Result, error) {
			b := briefFrom(job)
			seq, err := w.Write(ctx, b, progress)
			if err != nil {
				return engine.Result{}, err
			}
			return engine.Result{Summary: summarize(b, seq), Output: seq}, nil
		}),
	}
}

func briefFrom(job engine.Job) Brief {
	s := func(k string) string { v, _ := job.Input[k].(string); return v }
	n := 3
	fmt.Sscanf(s("sequence_emails"), "%d", &n)
	return Brief{
		ProductDescription: s("product_description"), TargetRole: s("target_role"),
		ValueProposition: s("value_proposition"), ProofPoints: s("proof_points"),
		ResearchSignals: s("research_signals"), CTAGoal: s("cta_goal"), Emails: n,
		SenderContext: s("sender_context"), Language: s("interaction_language"), Brand: job.BrandContext,
	}
}

func summarize(b Brief, s Sequence) string {
	if b.Language == "Chinese" {
		return fmt.Sprintf("为%s撰写了%d封冷启动邮件序列（目标：%s），覆盖第%d天到第%d天。",
			b.TargetRole, len(s.Emails), ctaLabelZH[b.CTAGoal], s.Emails[0].SendDay, s.Emails[len(s.Emails)-1].SendDay)
	}
	return fmt.Sprintf("Wrote a %d-email cold sequence for %s, aiming for a reply that means %q, sent over days %d to %d.",
		len(s.Emails), b.TargetRole, b.CTAGoal, s.Emails[0].SendDay, s.Emails[len(s.Emails)-1].SendDay)
}
