package apps

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The built-in writer's reading of the brief: the target role as a
// phrase, and the research signals as notes to open with.

// rolePhrase is the target role as it reads after "for": lower case, with
// an article when it names one person ("a head of marketing").
func (w *writer) rolePhrase(lvl int) string {
	r := lowerFirst(w.part(firstClause(firstSentence(w.role), false), 12, lvl))
	if r == "" {
		return "people in your role"
	}
	f := strings.Fields(r)
	switch strings.ToLower(f[0]) {
	case "a", "an", "the", "any", "every", "each", "one", "our", "your", "their":
		return r
	}
	head := f[0]
	for _, word := range f[1:] {
		if prepositions[strings.ToLower(word)] {
			break
		}
		head = word
	}
	h := strings.ToLower(strings.Trim(head, ".,;:()"))
	if strings.HasSuffix(h, "s") && !strings.HasSuffix(h, "ss") || h == "people" || h == "staff" || h == "leadership" {
		return r
	}
	if h := strings.ToLower(f[0]); h != "" && strings.ContainsRune("aeiou", rune(h[0])) {
		return "an " + r
	}
	return "a " + r
}

var prepositions = map[string]bool{"of": true, "at": true, "in": true, "for": true, "with": true, "who": true,
	"from": true, "on": true, "that": true, "running": true, "and": true, "or": true}

// A note is one of the research signals, with the form it starts in.
type note struct {
	kind int
	text string
}

const (
	noteOther       = iota
	notePast        // "Raised a seed round"
	noteProgressive // "Hiring two account managers"
)

// clause is the note as it reads after "I saw that".
func (n note) clause() string {
	// The note's own "and is hiring" reads "and are hiring" after "you".
	text := strings.NewReplacer(" and is ", " and are ", " and has ", " and have ", " and was ", " and were ").Replace(lowerFirst(n.text))
	if n.kind == noteProgressive {
		return "you're " + text
	}
	return "you " + text
}

var pastVerbs = map[string]bool{"won": true, "grew": true, "began": true, "made": true, "built": true, "sold": true,
	"bought": true, "left": true, "became": true, "hit": true, "brought": true, "took": true, "set": true, "put": true}

// notes are the first two research signals (split at line ends, sentence
// ends and semicolons), shortened.
func (w *writer) notes(lvl int) []note {
	var out []note
	for _, s := range sentences(w.signal) {
		for c := range strings.FieldsFuncSeq(s, func(r rune) bool { return r == ';' || r == '；' }) {
			text := w.part(c, 14, lvl)
			if text == "" {
				continue
			}
			out = append(out, note{kind: noteKind(text, w.zh), text: text})
			if len(out) == 2 {
				return out
			}
		}
	}
	return out
}

func noteKind(s string, zh bool) int {
	f := strings.Fields(s)
	if zh || len(f) < 2 {
		return noteOther
	}
	first, next := strings.ToLower(f[0]), []rune(f[1])[0]
	if innerCaps(f[0]) { // "iOS", "SaaS": a name
		return noteOther
	}
	lowerNext := unicode.IsLower(next) || unicode.IsDigit(next)
	switch {
	case pastVerbs[first] || strings.HasSuffix(first, "ed") && len(first) > 3 && lowerNext:
		return notePast
	case strings.HasSuffix(first, "ing") && len(first) > 4 && lowerNext:
		return noteProgressive
	}
	return noteOther
}

// leadingName is the name s starts with: its capitalized words before a
// word in lower case (before a verb, "Acme Ledger automates", when verb).
func leadingName(s string, verb bool) string {
	f := strings.Fields(s)
	var name []string
	for _, word := range f {
		r, _ := utf8.DecodeRuneInString(word)
		if !unicode.IsUpper(r) || len(name) == 4 {
			break
		}
		name = append(name, strings.TrimRight(word, ",.;:!?"))
		if strings.TrimRight(word, ",.;:!?") != word {
			break
		}
	}
	if len(name) == 0 || len(name) > 3 || notNames[strings.ToLower(name[0])] {
		return ""
	}
	if len(name) == 1 {
		if l := strings.ToLower(name[0]); strings.HasSuffix(l, "ed") || strings.HasSuffix(l, "ing") || strings.HasSuffix(l, "ly") {
			return ""
		}
	}
	if len(name) == len(f) {
		return strings.Join(name, " ")
	}
	next := f[len(name)]
	r, _ := utf8.DecodeRuneInString(next)
	if strings.TrimRight(f[len(name)-1], ",.;:!?") != f[len(name)-1] || !unicode.IsLower(r) && !unicode.IsDigit(r) {
		return ""
	}
	if verb && !(strings.HasSuffix(next, "s") && !strings.HasSuffix(next, "ss")) {
		return ""
	}
	return strings.Join(name, " ")
}

var notNames = map[string]bool{"our": true, "we": true, "the": true, "a": true, "an": true, "this": true, "that": true,
	"these": true, "those": true, "it": true, "they": true, "customers": true, "clients": true, "teams": true,
	"over": true, "more": true, "most": true, "all": true, "every": true, "each": true, "one": true, "two": true}
