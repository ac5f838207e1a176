package apps

import (
	"strings"
	"unicode/utf8"
)

// The built-in writer's subjects: within 60 characters, cut on a word
// or a clause, never mid-word.

func (w *writer) subject(angle string) string {
	if w.zh {
		return w.subjectZH(angle)
	}
	switch angle {
	case "opener":
		if notes := w.notes(0); len(notes) > 0 {
			switch n := notes[0]; n.kind {
			case notePast:
				return w.subjectLine("After you ", lowerFirst(n.text), "", "A note after your news")
			case noteProgressive:
				return w.subjectLine("While you're ", lowerFirst(n.text), "", "A note after your news")
			default:
				return w.subjectLine("", n.text, "", "A note after your news")
			}
		}
		return w.subjectLine("A question for ", w.rolePhrase(0), "", "A quick question")
	case "value":
		return w.subjectLine("", firstClause(firstSentence(w.value), false), "", "What it changes for you")
	case "proof":
		if w.proof == "" {
			return "A bit of background on us"
		}
		if name := leadingName(firstSentence(w.proof), false); name != "" {
			return w.subjectLine("How ", name, " did it", "A result worth sharing")
		}
		return "A result worth sharing"
	case "idea":
		return "One idea, whatever you decide"
	case "pilot":
		return "A smaller first step"
	case "walkthrough":
		return "Easier to show than tell"
	default:
		return "Closing the loop"
	}
}

func (w *writer) subjectZH(angle string) string {
	switch angle {
	case "opener":
		if notes := w.notes(0); len(notes) > 0 {
			return w.subjectLine("关于", notes[0].text, "", "关于您最近的动态")
		}
		return w.subjectLine("想请教", firstClause(firstSentence(w.role), true), "一个问题", "想请教您一个问题")
	case "value":
		return w.subjectLine("", firstClause(firstSentence(w.value), true), "", "对您来说会有什么变化")
	case "proof":
		if w.proof == "" {
			return "简单介绍一下我们的背景"
		}
		return "一个值得参考的案例"
	case "idea":
		return "一个小建议，合不合作都用得上"
	case "pilot":
		return "可以先从小处开始"
	case "walkthrough":
		return "与其多说，不如看看"
	default:
		return "最后一封跟进"
	}
}

// subjectLine is prefix+text+suffix, text cut on a word boundary so that
// the subject fits, with no closing punctuation; fallback when nothing of
// text would remain.
func (w *writer) subjectLine(prefix, text, suffix, fallback string) string {
	limit := maxSubjectRunes
	if w.zh {
		limit = maxSubjectRunesZH
	}
	text = strings.Join(strings.Fields(text), " ")
	cut := false
	if budget := limit - utf8.RuneCountInString(prefix+suffix); utf8.RuneCountInString(text) > budget {
		var ok bool
		if text, ok = cutRunes(clauseWithin(text, budget), budget); !ok {
			return fallback
		}
		cut = true
	}
	if text = trimEnd(text, cut); text == "" {
		return fallback
	}
	return prefix + text + suffix
}

// clauseWithin is s up to the last clause boundary (a comma, "and",
// "while") that leaves between a third of max and max runes, or s.
func clauseWithin(s string, max int) string {
	best := -1
	for _, sep := range []string{", ", "; ", " and ", " but ", " while ", " with ", " - ", " – ", " — ", "，", "；", "并且", "以及"} {
		for i := 0; ; {
			j := strings.Index(s[i:], sep)
			if j < 0 {
				break
			}
			at := i + j
			if n := utf8.RuneCountInString(s[:at]); n > max {
				break
			} else if n >= max/3 && at > best {
				best = at
			}
			i = at + len(sep)
		}
	}
	if best < 0 {
		return s
	}
	return s[:best]
}
