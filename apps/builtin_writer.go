package apps

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/apprun/apprun/engine"
)

// BuiltinWriter writes a usable sequence from the brief alone, with no
// model: an opener tied to the research signals, the value proposition, the
// proof points, a call to action matching the goal, signed by the sender.
type BuiltinWriter struct{}

var ctaLine = map[string]string{
	"Interest check": "Is this worth a closer look, or not a priority right now? A one-word reply is plenty.",
	"Meeting":        "Open to a 20-minute call next week? Tuesday or Thursday afternoon works on my side.",
	"Introduction":   "If this sits with someone else on your team, who would be the right person to talk to?",
}

var ctaLineZH = map[string]string{
	"Interest check": "这件事值得进一步了解吗？还是目前不是重点？回复一个字就够了。",
	"Meeting":        "下周方便通个20分钟的电话吗？周二或周四下午我都可以。",
	"Introduction":   "如果这件事由团队里的其他同事负责，能否告诉我应该联系哪一位？",
}

// plan is the shape of a sequence: which angle each touch takes and when.
var plan = map[int][]struct {
	angle string
	day   int
}{
	3: {{"opener", 0}, {"proof", 3}, {"breakup", 7}},
	4: {{"opener", 0}, {"value", 3}, {"proof", 7}, {"breakup", 12}},
	5: {{"opener", 0}, {"value", 3}, {"proof", 7}, {"idea", 11}, {"breakup", 16}},
}

// Write writes the sequence the brief asks for, reporting each step.
func (BuiltinWriter) Write(ctx context.Context, b Brief, progress func(engine.Step)) (Sequence, error) {
	touches, ok := plan[b.Emails]
	if !ok {
		touches = plan[3]
	}
	total := len(touches) + 3
	step := 0
	report := func(tool, msg string) error {
		step++
		progress(engine.Step{Index: step, Total: total, Tool: tool, Message: msg})
		return ctx.Err()
	}
	if err := report("analyze_brief", "Reading the brief and the research signals"); err != nil {
		return Sequence{}, err
	}
	if err := report("plan_sequence", fmt.Sprintf("Planning %d touches", len(touches))); err != nil {
		return Sequence{}, err
	}
	t := textsFor(b)
	if t.value == "" {
		touches = withoutValue(touches)
	}
	seq := Sequence{Language: b.Language, CTAGoal: b.CTAGoal}
	for i, tc := range touches {
		if err := report("write_email", fmt.Sprintf("Writing email %d of %d (%s)", i+1, len(touches), tc.angle)); err != nil {
			return Sequence{}, err
		}
		subject, body := t.email(tc.angle)
		seq.Emails = append(seq.Emails, Email{Touch: i + 1, SendDay: tc.day, Angle: tc.angle, Subject: subject, Body: body})
	}
	if err := report("review_sequence", "Checking subjects, length and the call to action"); err != nil {
		return Sequence{}, err
	}
	return seq, nil
}

// texts holds the pieces of a brief, in one language.
type texts struct {
	b                                   Brief
	zh                                  bool
	product, role, value, proof, signal string
	signature                           string
}

func textsFor(b Brief) texts {
	t := texts{b: b, zh: b.Language == "Chinese",
		product: firstSentence(b.ProductDescription, 160), role: firstSentence(b.TargetRole, 120),
		value: firstSentence(b.ValueProposition, 200), proof: firstSentence(b.ProofPoints, 240),
		signal: firstSentence(b.ResearchSignals, 200)}
	sender := strings.TrimSpace(b.SenderContext)
	if b.Brand != nil {
		if sender == "" {
			sender = b.Brand.Name
		} else {
			sender += ", " + b.Brand.Name
		}
	}
	if sender == "" {
		sender = map[bool]string{false: "The team", true: "团队"}[t.zh]
	}
	t.signature = sender
	return t
}

func (t texts) cta() string {
	if t.zh {
		return ctaLineZH[t.b.CTAGoal]
	}
	return ctaLine[t.b.CTAGoal]
}

func (t texts) email(angle string) (string, string) {
	if t.zh {
		return t.emailZH(angle)
	}
	value := strings.TrimSuffix(lowerFirst(t.value), ".")
	var subject, body string
	switch angle {
	case "opener":
		subject = "A question for " + clip(t.role, 60)
		opener := "I'm writing because " + lowerFirst(strings.TrimSuffix(t.role, ".")) + " tend to feel this problem before anyone else."
		if t.signal != "" {
			subject = "Noticed: " + clip(t.signal, 60)
			opener = "Something I noticed prompted this note: " + t.signal + " Moments like that usually bring up the question below."
		}
		body = opener + "\n\nFor context: " + t.product
		if value != "" {
			body += " We help people like you " + value + "."
		}
	case "value":
		subject = "The problem behind " + clip(t.role, 50)
		body = "Following up with the one thing that matters: " + value + ".\n\nThat is what " + strings.TrimSuffix(t.product, ".") + " is built for."
	case "proof":
		subject = "How others handled it"
		if t.proof != "" {
			body = "A proof point rather than a pitch: " + t.proof + "\n\nHappy to share how that played out and whether it would carry over to you."
		} else {
			body = "Rather than another pitch: the teams that get the most from this start small, with one workflow, and judge it on results within a few weeks.\n\nI can walk you through what that first step would look like for you."
		}
	case "proof_followup":
		subject = "A quick follow-up"
		body = "Following up on my last note in case it got buried. The short version: " + strings.TrimSuffix(t.product, ".") + ", for " + lowerFirst(strings.TrimSuffix(t.role, ".")) + "."
	case "idea":
		subject = "One idea for your team"
		body = "One concrete idea, free to use either way: pick the single most repetitive step your team does each week and measure it for a week. That number usually makes the case, for us or for anyone."
	case "breakup":
		subject = "Closing the loop"
		topic := "this"
		if value != "" {
			topic = "the goal to " + value
		}
		body = "I haven't heard back, so I'll assume the timing isn't right and stop here. If " + topic + " becomes a priority, just reply to this thread."
	}
	if angle != "breakup" {
		body += "\n\n" + t.cta()
	}
	return subject, "Hi,\n\n" + body + "\n\nBest,\n" + t.signature
}

func (t texts) emailZH(angle string) (string, string) {
	value := t.value
	if value == "" {
		value = "借助" + t.product + "减轻日常工作负担"
	}
	var subject, body string
	switch angle {
	case "opener":
		subject = "想请教" + clip(t.role, 30) + "一个问题"
		opener := "联系您是因为像您这样的团队（" + t.role + "）往往最先遇到这个问题。"
		if t.signal != "" {
			subject = "关注到：" + clip(t.signal, 30)
			opener = "我注意到" + t.signal + "这类变化通常会带来这封邮件想讨论的问题。"
		}
		body = opener + "\n\n" + t.product + "我们帮助像您这样的团队：" + value + "。"
	case "value":
		subject = "关于" + clip(t.role, 30) + "面临的核心问题"
		body = "跟进一下最关键的一点：" + value + "。\n\n这正是" + t.product + "要解决的。"
	case "proof":
		subject = "其他团队是怎么做的"
		if t.proof != "" {
			body = "不多推销，分享一个实际案例：" + t.proof + "\n\n很乐意介绍具体过程，以及它是否适用于您的情况。"
		} else {
			body = "不多推销：效果最好的团队通常从一个小流程开始，几周内就能看到结果。\n\n我可以介绍一下第一步可能是什么样子。"
		}
	case "proof_followup":
		subject = "简单跟进一下"
		body = "跟进一下上一封邮件，以防被淹没。简单来说：" + t.product
	case "idea":
		subject = "给您团队的一个小建议"
		body = "一个具体的建议，无论是否合作都可以用：挑出团队每周最重复的一项工作，记录一周所花的时间。这个数字通常最有说服力。"
	case "breakup":
		subject = "最后一封跟进"
		body = "一直没有收到回复，我想现在可能不是合适的时机，就不再打扰了。如果之后" + value + "成为重点，直接回复这封邮件即可。"
	}
	if angle != "breakup" {
		body += "\n\n" + t.cta()
	}
	return subject, "您好，\n\n" + body + "\n\n祝好，\n" + t.signature
}

// firstSentence returns the first sentence or line of s, at most max runes.
func firstSentence(s string, max int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\n"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	for _, sep := range []string{". ", "。", "! ", "? "} {
		if i := strings.Index(s, sep); i >= 0 {
			s = s[:i+len(strings.TrimRight(sep, " "))]
		}
	}
	s = clip(s, max)
	if s != "" && !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "。") && !strings.HasSuffix(s, "!") && !strings.HasSuffix(s, "?") {
		s += "."
	}
	return s
}

func clip(s string, max int) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= max {
		return strings.TrimRight(s, ".。")
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:max])) + "…"
}

func lowerFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 || len(s) > 1 && strings.ToUpper(s[:2]) == s[:2] { // keep acronyms
		return s
	}
	return strings.ToLower(string(r)) + s[n:]
}

// withoutValue swaps the value touch for the idea touch when the brief has
// no value proposition to build it on.
func withoutValue(touches []struct {
	angle string
	day   int
}) []struct {
	angle string
	day   int
} {
	out := append(touches[:0:0], touches...)
	for i := range out {
		if out[i].angle == "value" {
			out[i].angle = "idea"
		}
	}
	if len(out) == 5 { // idea is already the fourth touch
		out[3].angle = "proof_followup"
	}
	return out
}
