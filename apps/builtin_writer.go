package apps

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/apprun/apprun/engine"
)

// BuiltinWriter writes a usable sequence from the brief alone, with no
// model: an opener about the prospect's situation (the research signals
// when given, the target role otherwise) and the product, follow-ups that
// each add one new angle (the value, a proof point, an idea, a small first
// step, a break-up), one call to action matching the goal, signed as the
// sender context says or with {{sender_name}}. It writes the same sequence
// for the same brief, keeps every subject within 60 characters and every
// body under 120 words, shortening long inputs to their first sentence or
// clause and then to whole words.
type BuiltinWriter struct{}

// sendDays are the days the touches go out, by the length of the sequence.
var sendDays = map[int][]int{3: {0, 3, 7}, 4: {0, 3, 7, 12}, 5: {0, 3, 7, 11, 16}}

const (
	maxSubjectRunes   = 60 // the most a subject has, in runes
	maxSubjectRunesZH = 30 // a Chinese subject says as much in fewer
	maxBodyWords      = 120
	defaultGoal       = "Interest check"
	senderPlaceholder = "{{sender_name}}"
)

// Write writes the sequence the brief asks for, reporting each step.
func (BuiltinWriter) Write(ctx context.Context, b Brief, progress func(engine.Step)) (Sequence, error) {
	days, ok := sendDays[b.Emails]
	if !ok {
		days = sendDays[3]
	}
	total := len(days) + 3
	step := 0
	report := func(tool, msg string) error {
		step++
		progress(engine.Step{Index: step, Total: total, Tool: tool, Message: msg})
		return ctx.Err()
	}
	if err := report("analyze_brief", "Reading the brief and the research signals"); err != nil {
		return Sequence{}, err
	}
	if err := report("plan_sequence", fmt.Sprintf("Planning %d touches", len(days))); err != nil {
		return Sequence{}, err
	}
	w := newWriter(b, len(days))
	seq := Sequence{Language: b.Language, CTAGoal: b.CTAGoal}
	for i, angle := range w.angles {
		if err := report("write_email", fmt.Sprintf("Writing email %d of %d (%s)", i+1, len(w.angles), angle)); err != nil {
			return Sequence{}, err
		}
		subject, body := w.email(i, angle)
		seq.Emails = append(seq.Emails, Email{Touch: i + 1, SendDay: days[i], Angle: angle, Subject: subject, Body: body})
	}
	if err := report("review_sequence", "Checking subjects, length and the call to action"); err != nil {
		return Sequence{}, err
	}
	return seq, nil
}

// writer holds a brief's pieces, trimmed, and the plan made from them.
type writer struct {
	zh       bool
	goal     string // a key of ctaLines
	register string // the brand voice's register: "", casual, formal or direct

	product, role, value, proof, signal, sender string
	brandName, brandDesc, audience, website     string

	name       string   // the product's name, when its description starts with one
	valueTouch bool     // a follow-up carries the value proposition, so the opener leaves it out
	angles     []string // one a touch
}

func newWriter(b Brief, n int) *writer {
	t := func(s string) string { // an input with no letter or digit says nothing
		if !meaningful(s) {
			return ""
		}
		return strings.TrimSpace(s)
	}
	w := &writer{zh: b.Language == "Chinese", goal: b.CTAGoal,
		product: t(b.ProductDescription), role: t(b.TargetRole), value: t(b.ValueProposition),
		proof: t(b.ProofPoints), signal: t(b.ResearchSignals), sender: t(b.SenderContext)}
	if _, ok := ctaLines[w.goal]; !ok {
		w.goal = defaultGoal
	}
	if bc := b.Brand; bc != nil {
		w.brandName, w.brandDesc, w.audience, w.website = t(bc.Name), t(bc.Description), t(bc.Audience), t(bc.Website)
		w.register = registerOf(bc.Voice)
	}
	w.name = leadingName(firstSentence(w.product), true)

	// The follow-ups between the opener and the break-up: the value and the
	// proof when the brief has them, then angles that need no input. A
	// three-email sequence has room for one, so its opener carries the value.
	var middle []string
	if n > 3 && w.value != "" {
		middle = append(middle, "value")
		w.valueTouch = true
	}
	if w.proof != "" || w.brandDesc != "" || w.audience != "" {
		middle = append(middle, "proof")
	}
	middle = append(middle, "idea", "pilot", "walkthrough")
	w.angles = append(append([]string{"opener"}, middle[:n-2]...), "breakup")
	return w
}

// email writes one touch. A body that comes out at 120 words or more is
// written again from shorter pieces of the inputs until it fits.
func (w *writer) email(i int, angle string) (string, string) {
	var body string
	for lvl := range scales {
		body = w.body(i, angle, lvl)
		if bodyWords(body, w.zh) < maxBodyWords {
			break
		}
	}
	return w.subject(angle), body
}

// bodyWords is a body's length in words: its fields in English, half its
// characters in Chinese.
func bodyWords(body string, zh bool) int {
	if zh {
		return utf8.RuneCountInString(body) / 2
	}
	return len(strings.Fields(body))
}

func (w *writer) body(i int, angle string, lvl int) string {
	var paras []string
	if w.zh {
		paras = w.parasZH(i, angle, lvl)
	} else {
		paras = w.parasEN(i, angle, lvl)
	}
	g := greetings[w.register]
	if w.zh {
		g = greetingsZH[w.register]
	}
	return g[0] + "\n\n" + strings.Join(paras, "\n\n") + "\n\n" + g[1] + "\n" + w.signature(lvl)
}

// The calls to action, one a goal, worded three ways so that touches in a
// row do not ask the same way; the first is the opener's.
var ctaLines = map[string][3]string{
	"Interest check": {"Is this a problem worth solving for you right now, or not a priority? A one-word reply is plenty.",
		"Worth a closer look, or should I leave it there for now?",
		"Is this on your list for this quarter at all?"},
	"Meeting": {"Open to a 20-minute call next week, at a time that suits you?",
		"Would a short call help? Pick a time that works for you and I'll fit around it.",
		"If a quick walkthrough would be useful, what time suits you?"},
	"Introduction": {"If this sits with someone else on your team, who would be the right person to talk to?",
		"Is there someone else on your team I should speak with about this?",
		"If you're not the right person for this, could you point me to who is?"},
}

var ctaLinesZH = map[string][3]string{
	"Interest check": {"这件事对您来说值得解决吗？还是目前不是重点？回复一个字就够了。",
		"值得进一步了解吗？还是我先不打扰？",
		"这件事在您本季度的计划里吗？"},
	"Meeting": {"下周方便通个20分钟的电话吗？时间按您方便的来。",
		"方便的话，约个简短的电话聊聊？您定时间，我来配合。",
		"如果想看看具体演示，您什么时候方便？"},
	"Introduction": {"如果这件事由团队里的其他同事负责，能否告诉我应该联系哪一位？",
		"团队里是否有更合适的同事，我可以和他聊聊这件事？",
		"如果您不是负责这件事的人，能否帮我指个方向？"},
}

// The break-up's last line: the call to action, left open.
var breakupLines = map[string]string{
	"Interest check": "If it moves up your list later, a one-line reply to this thread is all it takes.",
	"Meeting":        "If things change, reply to this thread and we'll find a time that suits you.",
	"Introduction":   "And if someone else owns this, reply with their name and I'll reach out to them instead.",
}

var breakupLinesZH = map[string]string{
	"Interest check": "如果之后这件事提上日程，直接回复这封邮件即可。",
	"Meeting":        "如果之后情况有变，回复这封邮件，我们再约一个您方便的时间。",
	"Introduction":   "如果这件事由其他同事负责，回复告诉我对方的名字就好，我会直接联系。",
}

func (w *writer) cta(i int) string {
	if w.zh {
		return ctaLinesZH[w.goal][i%3]
	}
	return ctaLines[w.goal][i%3]
}
