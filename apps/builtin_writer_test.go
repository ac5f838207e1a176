package apps

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/inputschema"
)

// The built-in cold email writer's rules, one test each. Every run goes
// through the catalog, so its input is checked and defaulted as a
// request's would be, and its output is checked against the App's output
// schema (a sequence that does not match fails the run).

var (
	builtinApp     *engine.App
	builtinAppErr  error
	builtinAppOnce sync.Once
)

// writeSequence runs the cold email writer without a model on input and
// brand (which may be nil).
func writeSequence(t *testing.T, input map[string]any, brand *engine.BrandContext) (Sequence, []engine.Step) {
	t.Helper()
	builtinAppOnce.Do(func() {
		var c *engine.Catalog
		if c, builtinAppErr = engine.NewCatalog(inputschema.Compile, Default()...); builtinAppErr == nil {
			builtinApp, builtinAppErr = c.Lookup(ColdEmailSlug)
		}
	})
	if builtinAppErr != nil {
		t.Fatal(builtinAppErr)
	}
	in, err := builtinApp.ValidateInput(maps.Clone(input))
	if err != nil {
		t.Fatalf("input refused: %v", err)
	}
	var steps []engine.Step
	res, err := builtinApp.Executor(context.Background(), engine.Job{Input: in, BrandContext: brand}, func(s engine.Step) { steps = append(steps, s) })
	if err != nil {
		t.Fatalf("the run failed: %v", err)
	}
	return emails(t, res), steps
}

// with is the input with the given fields set.
func with(input map[string]any, kv ...string) map[string]any {
	out := maps.Clone(input)
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func requiredOnly(lang string) map[string]any {
	if lang == "Chinese" {
		return map[string]any{"product_description": "Acme Ledger 为小型代理公司自动完成记账。",
			"target_role": "5到20人营销代理公司的创始人", "interaction_language": "Chinese"}
	}
	return map[string]any{"product_description": "Acme Ledger automates bookkeeping for small agencies.",
		"target_role": "Founders of 5-20 person marketing agencies"}
}

// fullBrief is the docs' example with every optional field set.
func fullBrief(lang string) map[string]any {
	if lang == "Chinese" {
		return with(requiredOnly(lang), "value_proposition", "月结从五天缩短到一天",
			"proof_points", "Brightline 代理公司把记账时间减少了70%。", "research_signals", "十月完成种子轮融资；正在招聘两名客户经理",
			"cta_goal", "Meeting", "sequence_emails", "5 emails", "sender_context", "王磊，Acme Ledger 联合创始人")
	}
	return with(requiredOnly(lang), "value_proposition", "Month-end close in one day instead of five",
		"proof_points", "Brightline Agency cut bookkeeping time by 70%.", "research_signals", "Raised a seed round in October; hiring two account managers",
		"cta_goal", "Meeting", "sequence_emails", "5 emails", "sender_context", "Dana, co-founder of Acme Ledger")
}

func fullBrand() *engine.BrandContext {
	return &engine.BrandContext{Name: "Northwind", Description: "Northwind was founded by former agency CFOs.",
		Voice: "Friendly and plain-spoken", Audience: "Independent creative studios", Website: "https://northwind.example"}
}

// text is the whole sequence as one string.
func text(s Sequence) string {
	var b strings.Builder
	for _, e := range s.Emails {
		fmt.Fprintf(&b, "%d %s %s\n%s\n%s\n\n", e.SendDay, e.Angle, e.Subject, e.Subject, e.Body)
	}
	return b.String()
}

// paragraphs splits a body into the greeting, the paragraphs between, and
// the sign-off.
func paragraphs(body string) (greeting string, middle []string, signoff string) {
	p := strings.Split(body, "\n\n")
	return p[0], p[1 : len(p)-1], p[len(p)-1]
}

// bodyLength is a body's length in words: strings.Fields in English, half
// its characters in Chinese.
func bodyLength(body, lang string) int {
	if lang == "Chinese" {
		return utf8.RuneCountInString(body) / 2
	}
	return len(strings.Fields(body))
}

var languages = []string{"English", "Chinese"}

func TestBuiltinWriterUsesEveryInput(t *testing.T) {
	t.Parallel()
	type change struct {
		name         string
		input        []string                    // fields to set
		brand        func(*engine.BrandContext)  // or a brand context to add
		trace        map[string]string           // what the sequence then says, by language
		check        func(s Sequence) bool       // or what must hold
		brandWithout func() *engine.BrandContext // the brand context of the run without, when not nil
	}
	changes := []change{
		{name: "value_proposition", input: []string{"value_proposition", "Close the books in one day instead of five"},
			trace: map[string]string{"English": "close the books in one day instead of five"}},
		{name: "value_proposition zh", input: []string{"value_proposition", "月结从五天缩短到一天"},
			trace: map[string]string{"Chinese": "月结从五天缩短到一天"}},
		{name: "proof_points", input: []string{"proof_points", "Brightline Agency cut bookkeeping time by 70%."},
			trace: map[string]string{"English": "Brightline Agency cut bookkeeping time by 70%", "Chinese": "Brightline Agency cut bookkeeping time by 70%"}},
		{name: "research_signals", input: []string{"research_signals", "Raised a seed round in October; hiring two account managers"},
			trace: map[string]string{"English": "raised a seed round in October, and that you're hiring two account managers", "Chinese": "Raised a seed round in October"}},
		{name: "cta_goal Meeting", input: []string{"cta_goal", "Meeting"},
			trace: map[string]string{"English": "20-minute call", "Chinese": "20分钟的电话"}},
		{name: "cta_goal Introduction", input: []string{"cta_goal", "Introduction"},
			trace: map[string]string{"English": "who would be the right person", "Chinese": "应该联系哪一位"}},
		{name: "sequence_emails 4", input: []string{"sequence_emails", "4 emails"}, check: func(s Sequence) bool { return len(s.Emails) == 4 }},
		{name: "sequence_emails 5", input: []string{"sequence_emails", "5 emails"}, check: func(s Sequence) bool { return len(s.Emails) == 5 }},
		{name: "sender_context", input: []string{"sender_context", "Dana, co-founder of Acme Ledger"},
			trace: map[string]string{"English": "Dana\nco-founder of Acme Ledger", "Chinese": "Dana\nco-founder of Acme Ledger"}},
		{name: "interaction_language", input: []string{"interaction_language", "Chinese"},
			check: func(s Sequence) bool { return s.Language == "Chinese" && strings.Contains(text(s), "您好") }},
		{name: "brand name", brand: func(b *engine.BrandContext) { b.Name = "Northwind" },
			trace: map[string]string{"English": "Northwind", "Chinese": "Northwind"}},
		{name: "brand description", brand: func(b *engine.BrandContext) { b.Description = "Northwind was founded by former agency CFOs." },
			trace: map[string]string{"English": "Northwind was founded by former agency CFOs", "Chinese": "Northwind was founded by former agency CFOs"}},
		{name: "brand voice casual", brand: func(b *engine.BrandContext) { b.Voice = "Friendly, a little playful" },
			trace: map[string]string{"English": "Hey {{first_name}},", "Chinese": "嗨，{{first_name}}："}},
		{name: "brand voice formal", brand: func(b *engine.BrandContext) { b.Voice = "Formal and precise" },
			trace: map[string]string{"English": "Kind regards,", "Chinese": "顺颂商祺"}},
		{name: "brand voice other", brand: func(b *engine.BrandContext) { b.Voice = "Confident, no jargon" },
			trace: map[string]string{"English": "Thanks,", "Chinese": "谢谢，"}},
		{name: "brand audience", brand: func(b *engine.BrandContext) { b.Audience = "Independent creative studios" },
			trace: map[string]string{"English": "independent creative studios", "Chinese": "Independent creative studios"}},
		{name: "brand website", brand: func(b *engine.BrandContext) { b.Website = "https://northwind.example" },
			trace: map[string]string{"English": "https://northwind.example", "Chinese": "https://northwind.example"}},
		{name: "a brand context's fields beside its name", brand: func(b *engine.BrandContext) { *b = *fullBrand() },
			brandWithout: func() *engine.BrandContext { return &engine.BrandContext{Name: "Northwind"} },
			trace:        map[string]string{"English": "former agency CFOs", "Chinese": "former agency CFOs"}},
	}
	for _, lang := range languages {
		for _, emails := range []string{"3 emails", "5 emails"} {
			base := with(requiredOnly(lang), "sequence_emails", emails)
			for _, c := range changes {
				trace, traced := c.trace[lang]
				if c.check == nil && !traced {
					continue
				}
				if c.name == "interaction_language" && lang == "Chinese" || strings.HasPrefix(c.name, "sequence_emails") && emails != "3 emails" {
					continue
				}
				t.Run(lang+"/"+emails+"/"+c.name, func(t *testing.T) {
					t.Parallel()
					var brandWithout, brandWith *engine.BrandContext
					if c.brandWithout != nil {
						brandWithout = c.brandWithout()
					}
					if c.brand != nil {
						brandWith = &engine.BrandContext{}
						if brandWithout != nil {
							*brandWith = *brandWithout
						}
						c.brand(brandWith)
					}
					without, _ := writeSequence(t, base, brandWithout)
					withIt, _ := writeSequence(t, with(base, c.input...), brandWith)
					if reflect.DeepEqual(without, withIt) {
						t.Fatalf("the sequence is the same with %s as without:\n%s", c.name, text(withIt))
					}
					if c.check != nil && !c.check(withIt) {
						t.Fatalf("with %s:\n%s", c.name, text(withIt))
					}
					if traced && (!strings.Contains(text(withIt), trace) || strings.Contains(text(without), trace)) {
						t.Fatalf("%q is in the sequence only with %s? With it:\n%s\nWithout:\n%s", trace, c.name, text(withIt), text(without))
					}
				})
			}
		}
	}
}

func TestBuiltinWriterUsesTheValueInEveryLength(t *testing.T) {
	t.Parallel()
	for _, n := range []string{"3 emails", "4 emails", "5 emails"} {
		s, _ := writeSequence(t, with(requiredOnly("English"), "sequence_emails", n, "value_proposition", "Close the books in one day instead of five"), nil)
		if got := strings.Count(text(s), "close the books in one day instead of five"); got == 0 {
			t.Errorf("%s: the value proposition is not used:\n%s", n, text(s))
		}
	}
}

// longInputs are inputs at (or near) their schema's maxLength: one long
// sentence each, with no punctuation to cut at.
func longInputs(lang string) map[string]any {
	long := func(words string, n int) string {
		var b strings.Builder
		for utf8.RuneCountInString(b.String()) < n {
			if b.Len() > 0 && lang != "Chinese" {
				b.WriteByte(' ')
			}
			b.WriteString(words)
		}
		return strings.TrimSpace(string([]rune(b.String())[:n]))
	}
	if lang == "Chinese" {
		return map[string]any{"interaction_language": "Chinese", "cta_goal": "Introduction", "sequence_emails": "5 emails",
			"product_description": long("自动完成记账对账和开票的平台", 2000), "target_role": long("营销代理公司创始人和财务负责人", 500),
			"value_proposition": long("月结从五天缩短到一天", 1000), "proof_points": long("多家代理公司把记账时间减少了一大半", 4000),
			"research_signals": long("十月完成种子轮融资并且正在招聘两名客户经理", 4000), "sender_context": long("王磊联合创始人", 300)}
	}
	return map[string]any{"cta_goal": "Introduction", "sequence_emails": "5 emails",
		"product_description": long("Acme Ledger automates bookkeeping reconciliation and invoicing for agencies", 2000),
		"target_role":         long("Founders of growing marketing agencies", 500),
		"value_proposition":   long("Month-end close in one day instead of five", 1000),
		"proof_points":        long("Brightline Agency cut bookkeeping time by seventy percent", 4000),
		"research_signals":    long("Raised a seed round in October and is hiring two account managers", 4000),
		"sender_context":      long("Dana Kim co-founder and head of partnerships at Acme Ledger", 300)}
}

func longBrand() *engine.BrandContext {
	long := strings.Repeat("Northwind builds finance tools for creative teams ", 40)
	return &engine.BrandContext{Name: "Northwind Finance Tools For Creative Teams Everywhere", Description: long, Voice: "warm",
		Audience: long, Website: "https://northwind.example/" + strings.Repeat("x", 200)}
}

// giantToken is an input that is one word of the field's maxLength.
func giantToken(n int) string { return strings.Repeat("x", n) }

// briefsToMeasure are the briefs the length rules are checked on.
func briefsToMeasure(lang string) map[string]struct {
	input map[string]any
	brand *engine.BrandContext
} {
	type brief = struct {
		input map[string]any
		brand *engine.BrandContext
	}
	return map[string]brief{
		"required only":   {requiredOnly(lang), nil},
		"the docs' brief": {fullBrief(lang), nil},
		"with a brand":    {fullBrief(lang), fullBrand()},
		"long inputs":     {longInputs(lang), nil},
		"long everything": {longInputs(lang), longBrand()},
		"a giant word": {with(requiredOnly(lang), "product_description", giantToken(2000), "target_role", giantToken(500),
			"value_proposition", giantToken(1000), "research_signals", giantToken(4000), "proof_points", giantToken(4000),
			"sender_context", giantToken(300), "sequence_emails", "5 emails"), nil},
		"the docs' research signal": {with(requiredOnly(lang), "research_signals", "Raised a seed round in October; hiring two account managers"), nil},
	}
}

var fallbackSubjects = map[string]bool{"A note after your news": true, "A quick question": true, "What it changes for you": true}

func TestBuiltinWriterSubjectsFitIn60Characters(t *testing.T) {
	t.Parallel()
	for _, lang := range languages {
		for name, b := range briefsToMeasure(lang) {
			t.Run(lang+"/"+name, func(t *testing.T) {
				t.Parallel()
				s, _ := writeSequence(t, b.input, b.brand)
				inputWords := map[string]bool{}
				for _, v := range b.input {
					for _, w := range strings.Fields(strings.ToLower(v.(string))) {
						inputWords[strings.TrimRight(w, ".,;:")] = true
					}
				}
				for _, e := range s.Emails {
					n := utf8.RuneCountInString(e.Subject)
					if n == 0 || n > 60 {
						t.Errorf("email %d: subject of %d characters: %q", e.Touch, n, e.Subject)
					}
					if r, _ := utf8.DecodeLastRuneInString(e.Subject); unicode.IsPunct(r) {
						t.Errorf("email %d: subject %q ends in punctuation", e.Touch, e.Subject)
					}
					if strings.Contains(e.Subject, "xxxxx") {
						t.Errorf("email %d: subject %q cuts a word", e.Touch, e.Subject)
					}
					// A subject cut from an input ends on one of its words
					// (or is the fallback, when there is no word to cut at).
					if lang == "English" && (e.Angle == "opener" || e.Angle == "value") {
						f := strings.Fields(strings.ToLower(e.Subject))
						if last := f[len(f)-1]; !inputWords[last] && !fallbackSubjects[e.Subject] {
							t.Errorf("email %d: subject %q ends in %q, not a word of the input", e.Touch, e.Subject, last)
						}
					}
				}
			})
		}
	}
	// The reported one: the docs' research signal made a 68-character subject.
	s, _ := writeSequence(t, with(requiredOnly("English"), "research_signals", "Raised a seed round in October; hiring two account managers"), nil)
	if got := s.Emails[0].Subject; got != "After you raised a seed round in October" {
		t.Errorf("opener subject %q", got)
	}
}

func TestBuiltinWriterBodiesStayUnder120Words(t *testing.T) {
	t.Parallel()
	for _, lang := range languages {
		for name, b := range briefsToMeasure(lang) {
			t.Run(lang+"/"+name, func(t *testing.T) {
				t.Parallel()
				s, _ := writeSequence(t, b.input, b.brand)
				for _, e := range s.Emails {
					if n := bodyLength(e.Body, lang); n >= 120 {
						t.Errorf("email %d (%s) is %d words long:\n%s", e.Touch, e.Angle, n, e.Body)
					}
				}
			})
		}
	}
}

func TestBuiltinWriterFirstEmailIsShortAndTrimsLongInputs(t *testing.T) {
	t.Parallel()
	for _, lang := range languages {
		// Three emails: the opener carries the value proposition too.
		s, _ := writeSequence(t, with(longInputs(lang), "sequence_emails", "3 emails"), longBrand())
		first := s.Emails[0].Body
		if n := bodyLength(first, lang); n >= 120 {
			t.Fatalf("%s: the first email is %d words long:\n%s", lang, n, first)
		}
		// Still an opener: the signal, the product and the ask survive the trimming.
		for _, want := range map[string][]string{"English": {"raised a seed round", "Acme Ledger automates", "month-end close", "right person"},
			"Chinese": {"十月完成种子轮融资", "自动完成记账", "月结", "应该联系哪一位"}}[lang] {
			if !strings.Contains(first, want) {
				t.Errorf("%s: the first email lost %q:\n%s", lang, want, first)
			}
		}
	}
}

func TestBuiltinWriterFollowUpsAddSomethingNew(t *testing.T) {
	t.Parallel()
	for _, lang := range languages {
		for _, n := range []string{"3 emails", "4 emails", "5 emails"} {
			for name, b := range map[string]struct {
				input map[string]any
				brand *engine.BrandContext
			}{"required only": {requiredOnly(lang), nil}, "everything": {fullBrief(lang), fullBrand()},
				"value, no proof": {with(requiredOnly(lang), "value_proposition", "Month-end close in one day instead of five"), nil}} {
				t.Run(lang+"/"+n+"/"+name, func(t *testing.T) {
					t.Parallel()
					s, _ := writeSequence(t, with(b.input, "sequence_emails", n), b.brand)
					angles := map[string]bool{}
					subjects := map[string]bool{}
					said := map[string]int{} // a sentence, and the touch that said it first
					for _, e := range s.Emails {
						if angles[e.Angle] || subjects[e.Subject] {
							t.Errorf("email %d repeats an angle or a subject: %s %q", e.Touch, e.Angle, e.Subject)
						}
						angles[e.Angle], subjects[e.Subject] = true, true
						_, middle, _ := paragraphs(e.Body)
						content := middle[:len(middle)-1] // without the call to action
						if len(content) == 0 {
							t.Fatalf("email %d says nothing but its ask:\n%s", e.Touch, e.Body)
						}
						for _, p := range content {
							for _, sentence := range sentences(p) {
								if first, ok := said[sentence]; ok && first != e.Touch {
									t.Errorf("email %d repeats a sentence of email %d: %q", e.Touch, first, sentence)
								}
								said[sentence] = e.Touch
							}
						}
						if bodyLength(e.Body, lang) >= 120 {
							t.Errorf("email %d is too long:\n%s", e.Touch, e.Body)
						}
					}
					if s.Emails[0].Angle != "opener" || s.Emails[len(s.Emails)-1].Angle != "breakup" {
						t.Errorf("angles: %s", text(s))
					}
				})
			}
		}
	}
}

func TestBuiltinWriterNeverSignsAsTheTeam(t *testing.T) {
	t.Parallel()
	for _, lang := range languages {
		for name, b := range briefsToMeasure(lang) {
			s, _ := writeSequence(t, b.input, b.brand)
			if strings.Contains(text(s), "The team") {
				t.Errorf("%s/%s: %q in:\n%s", lang, name, "The team", text(s))
			}
			for _, e := range s.Emails {
				if _, _, signoff := paragraphs(e.Body); strings.Contains(signoff, "团队") || strings.Contains(strings.ToLower(signoff), "the team") {
					t.Errorf("%s/%s: email %d signs as a team: %q", lang, name, e.Touch, signoff)
				}
			}
		}
	}
}

func TestBuiltinWriterWithoutASenderAsksForTheSendersName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		lang               string
		brand              *engine.BrandContext
		greeting, signoff  string
		needsSenderInInput bool
	}{
		{"English", nil, "Hi {{first_name}},", "Best,\n{{sender_name}}", false},
		{"Chinese", nil, "{{first_name}}，您好：", "祝好，\n{{sender_name}}", false},
		{"English", &engine.BrandContext{Name: "Northwind"}, "Hi {{first_name}},", "Best,\n{{sender_name}}\nNorthwind", false},
	} {
		s, _ := writeSequence(t, with(requiredOnly(c.lang), "sequence_emails", "4 emails"), c.brand)
		for _, e := range s.Emails {
			greeting, _, signoff := paragraphs(e.Body)
			if greeting != c.greeting || signoff != c.signoff {
				t.Errorf("%s: email %d opens %q and signs %q, want %q and %q", c.lang, e.Touch, greeting, signoff, c.greeting, c.signoff)
			}
		}
	}
}

func TestBuiltinWriterSignsAsTheSenderContextSays(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ lang, sender, signoff string }{
		{"English", "Dana, co-founder of Acme Ledger", "Best,\nDana\nco-founder of Acme Ledger"},
		{"English", "Lee Park, Head of Growth, Acme Ledger", "Best,\nLee Park\nHead of Growth, Acme Ledger"},
		{"English", "Sam", "Best,\nSam"},
		{"Chinese", "王磊，Acme Ledger 联合创始人", "祝好，\n王磊\nAcme Ledger 联合创始人"},
	} {
		s, _ := writeSequence(t, with(requiredOnly(c.lang), "sender_context", c.sender), nil)
		for _, e := range s.Emails {
			if _, _, signoff := paragraphs(e.Body); signoff != c.signoff {
				t.Errorf("sender %q: email %d signs %q, want %q", c.sender, e.Touch, signoff, c.signoff)
			}
		}
	}
	// Two senders sign two ways, in every email; a brand the sender does
	// not name is added to the role.
	a, _ := writeSequence(t, with(requiredOnly("English"), "sender_context", "Dana, co-founder"), &engine.BrandContext{Name: "Acme Ledger"})
	b, _ := writeSequence(t, with(requiredOnly("English"), "sender_context", "Lee, Head of Growth"), &engine.BrandContext{Name: "Acme Ledger"})
	for i := range a.Emails {
		_, _, sa := paragraphs(a.Emails[i].Body)
		_, _, sb := paragraphs(b.Emails[i].Body)
		if sa == sb || sa != "Best,\nDana\nco-founder, Acme Ledger" || sb != "Best,\nLee\nHead of Growth, Acme Ledger" {
			t.Errorf("email %d signs %q and %q", i+1, sa, sb)
		}
	}
}

func TestBuiltinWriterIsDeterministic(t *testing.T) {
	t.Parallel()
	for _, lang := range languages {
		input := fullBrief(lang)
		first, firstSteps := writeSequence(t, input, fullBrand())
		// The same brief, its fields added in the other order, many times.
		reordered := map[string]any{}
		keys := make([]string, 0, len(input))
		for k := range input {
			keys = append(keys, k)
		}
		for i := len(keys) - 1; i >= 0; i-- {
			reordered[keys[i]] = input[keys[i]]
		}
		for range 20 {
			again, steps := writeSequence(t, reordered, fullBrand())
			if !reflect.DeepEqual(first, again) || !reflect.DeepEqual(firstSteps, steps) {
				t.Fatalf("%s: two runs of one brief differ:\n%s\n---\n%s", lang, text(first), text(again))
			}
		}
	}
}

func TestBuiltinWriterReportsItsSteps(t *testing.T) {
	t.Parallel()
	s, steps := writeSequence(t, with(fullBrief("English"), "sequence_emails", "4 emails"), nil)
	want := []string{"analyze_brief", "plan_sequence", "write_email", "write_email", "write_email", "write_email", "review_sequence"}
	if len(steps) != len(want) || len(s.Emails) != 4 {
		t.Fatalf("steps %+v", steps)
	}
	for i, st := range steps {
		if st.Tool != want[i] || st.Index != i+1 || st.Total != len(want) {
			t.Errorf("step %d: %+v, want %s %d/%d", i, st, want[i], i+1, len(want))
		}
	}
	if !strings.Contains(steps[2].Message, "Writing email 1 of 4 (opener)") {
		t.Errorf("step 3 says %q", steps[2].Message)
	}
}
