package apps

import "strings"

// The built-in writer's paragraphs, by angle, in English and Chinese.

func (w *writer) parasEN(i int, angle string, lvl int) []string {
	role := w.rolePhrase(lvl)
	switch angle {
	case "opener":
		var paras []string
		if notes := w.notes(lvl); len(notes) > 0 {
			s := "I came across this while reading up on your team: " + notes[0].text + "."
			if notes[0].kind != noteOther {
				s = "I saw that " + notes[0].clause()
				if len(notes) > 1 && notes[1].kind != noteOther {
					s += ", and that " + notes[1].clause()
				}
				s += "."
			}
			paras = append(paras, s+" Moments like that often shift priorities for "+role+", so the timing seemed right.")
		} else {
			paras = append(paras, "I'll keep this short, since I know time is tight for "+role+".")
		}
		p := ""
		if product := w.part(w.product, 28, lvl); product == w.name && product != "" {
			p = "I'm writing about " + product + "."
		} else if product != "" {
			p = "What we do, in a sentence: " + product + "."
		}
		if v := w.part(w.value, 18, lvl); v != "" && !w.valueTouch {
			p = strings.TrimSpace(p + " What that changes for you: " + lowerFirst(v) + ".")
		}
		return nonEmpty(append(paras, p, w.cta(i)))
	case "value":
		does := "That is the core of what we do, and the fairest thing to judge us on."
		if w.name != "" {
			does = "That is the core of what " + w.name + " does, and the fairest thing to judge it on."
		}
		return []string{"Following up with the part I think matters most to " + role + ": " + lowerFirst(w.part(w.value, 18, lvl)) + ".",
			does, w.cta(i)}
	case "proof":
		var ps []string
		if p := w.part(w.proof, 28, lvl); p != "" {
			ps = append(ps, "A quick example rather than a pitch: "+p+".")
		}
		if d := w.part(w.brandDesc, 22, lvl); d != "" {
			ps = append(ps, "Some background on us: "+d+".")
		}
		if a := w.part(w.audience, 12, lvl); a != "" {
			ps = append(ps, "We mostly work with "+lowerFirst(a)+".")
		}
		offer := "Happy to walk you through how that would look for your team."
		if w.proof != "" {
			offer = "Happy to share the details, and whether they would carry over to your team."
		}
		return nonEmpty([]string{strings.Join(ps, " "), offer, w.cta(i)})
	case "idea":
		return []string{"One idea you can use whether or not we ever talk: pick the most repetitive task on your team's plate each week and time it for one week.",
			"That number usually makes the case for fixing it, with us or without us.", w.cta(i)}
	case "pilot":
		return []string{"If a full switch feels like too much right now, the first step can be small: one workflow, two weeks, and you judge it on the results.", w.cta(i)}
	case "walkthrough":
		return []string{"An email only goes so far. Seeing it on one of your own examples usually says more, and it needs no preparation on your side.", w.cta(i)}
	default: // breakup
		return []string{"I haven't heard back, so I'll take it the timing isn't right and stop here.", breakupLines[w.goal]}
	}
}

func (w *writer) parasZH(i int, angle string, lvl int) []string {
	role := w.part(firstClause(firstSentence(w.role), true), 12, lvl)
	if role == "" {
		role = "像您这样的负责人"
	}
	switch angle {
	case "opener":
		var paras []string
		if notes := w.notes(lvl); len(notes) > 0 {
			texts := make([]string, len(notes))
			for j, n := range notes {
				texts[j] = n.text
			}
			paras = append(paras, "注意到您那边的近况："+strings.Join(texts, "，")+"。对"+role+"来说，这种时候工作重点往往会有调整，所以想借这个时机联系您。")
		} else {
			paras = append(paras, "知道"+role+"平时事情多、时间紧，我就长话短说。")
		}
		p := ""
		if product := w.part(w.product, 28, lvl); product == w.name && product != "" {
			p = "想跟您介绍一下" + product + "。"
		} else if product != "" {
			p = "简单介绍一下我们：" + product + "。"
		}
		if v := w.part(w.value, 18, lvl); v != "" && !w.valueTouch {
			p += "对您来说，最直接的变化是：" + v + "。"
		}
		return nonEmpty(append(paras, p, w.cta(i)))
	case "value":
		does := "这正是我们产品的核心，也最适合用来评判我们。"
		if w.name != "" {
			does = "这正是" + w.name + "的核心，也最适合用来评判它。"
		}
		return []string{"跟进一下我认为对" + role + "最重要的一点：" + w.part(w.value, 18, lvl) + "。", does, w.cta(i)}
	case "proof":
		ps := ""
		if p := w.part(w.proof, 28, lvl); p != "" {
			ps += "与其推销，不如分享一个实际案例：" + p + "。"
		}
		if d := w.part(w.brandDesc, 22, lvl); d != "" {
			ps += "关于我们的一点背景：" + d + "。"
		}
		if a := w.part(w.audience, 12, lvl); a != "" {
			ps += "我们主要服务" + a + "。"
		}
		offer := "如果有帮助，我可以具体讲讲放到您的团队会是什么样子。"
		if w.proof != "" {
			offer = "很乐意介绍具体细节，以及是否适用于您的团队。"
		}
		return nonEmpty([]string{ps, offer, w.cta(i)})
	case "idea":
		return []string{"一个无论是否合作都用得上的建议：挑出团队每周最重复的一项工作，连续记录一周所花的时间。",
			"这个数字通常最能说明要不要改进，用不用我们都一样。", w.cta(i)}
	case "pilot":
		return []string{"如果整体切换显得太重，第一步可以很小：一个流程，试用两周，再根据结果决定。", w.cta(i)}
	case "walkthrough":
		return []string{"邮件能说清的有限。用您手头的一个真实例子来演示，往往更直观，您这边也不需要任何准备。", w.cta(i)}
	default: // breakup
		return []string{"一直没有收到回复，我想现在可能不是合适的时机，就不再打扰了。", breakupLinesZH[w.goal]}
	}
}
