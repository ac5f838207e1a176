package apps

import (
	"fmt"

	"github.com/apprun/apprun/engine"
)

// ColdEmailSlug is the slug of the cold email writer.
const ColdEmailSlug = "cold-email-writer"

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
