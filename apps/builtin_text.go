package apps

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text helpers of the built-in writer: sentences, clauses, and cuts on a
// word or clause boundary within a length.

// scales shrink the pieces taken from the inputs, in percent, each time a
// body comes out too long.
var scales = []int{100, 75, 55, 40, 25}

// part is s cut to its first sentence (its first clause once a body has
// had to be shortened) and to at most words words, 2 characters a word in
// Chinese, never mid-word, without closing punctuation.
func (w *writer) part(s string, words, lvl int) string {
	s = firstSentence(s)
	if lvl > 0 {
		s = firstClause(s, w.zh)
	}
	n := max(2, words*scales[lvl]/100)
	if w.zh {
		cut := false
		if at := widthIndex(s, 2*n); at >= 0 {
			s = cutWhole(s, at)
			cut = true
		}
		return trimEnd(s, cut)
	}
	return cutWords(s, n)
}

// widthIndex is the number of runes of s that fit in width, counted in
// Chinese characters (a wide rune takes 1, any other ½), or -1 when all of
// s fits.
func widthIndex(s string, width int) int {
	half := 0 // in halves
	i := 0
	for _, r := range s {
		if unicode.Is(unicode.Han, r) || r > unicode.MaxLatin1 {
			half += 2
		} else {
			half++
		}
		if half > 2*width {
			return i
		}
		i++
	}
	return -1
}

// sentences splits s at line ends and sentence ends ("Inc. ", "e.g. " and
// initials do not end one).
func sentences(s string) []string {
	var out []string
	add := func(s string) {
		if s = strings.TrimSpace(s); meaningful(s) {
			out = append(out, s)
		}
	}
	for line := range strings.SplitSeq(s, "\n") {
		r := []rune(line)
		start := 0
		for i, c := range r {
			end := false
			switch c {
			case '。', '！', '？':
				end = true
			case '.', '!', '?':
				end = i+1 == len(r) || unicode.IsSpace(r[i+1])
				if end && c == '.' && abbreviation(string(r[start:i])) {
					end = false
				}
			}
			if end {
				add(string(r[start : i+1]))
				start = i + 1
			}
		}
		add(string(r[start:]))
	}
	return out
}

func abbreviation(before string) bool {
	f := strings.Fields(before)
	if len(f) == 0 {
		return false
	}
	last := strings.ToLower(f[len(f)-1])
	if utf8.RuneCountInString(last) == 1 || strings.Contains(last, ".") {
		return true
	}
	switch last {
	case "inc", "ltd", "co", "corp", "llc", "etc", "vs", "mr", "ms", "mrs", "dr", "st", "no", "approx":
		return true
	}
	return false
}

// firstSentence is the first sentence of s.
func firstSentence(s string) string {
	if ss := sentences(s); len(ss) > 0 {
		return ss[0]
	}
	return ""
}

// firstClause is s up to its first comma, semicolon, colon, dash,
// parenthesis or "because", when that leaves at least two words (two
// characters in Chinese).
func firstClause(s string, zh bool) string {
	at := -1
	for _, sep := range []string{", ", "; ", ": ", " — ", " – ", " - ", " (", " because ", " since ", "，", "；", "：", "（"} {
		if i := strings.Index(s, sep); i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	if at < 0 {
		return s
	}
	c := strings.TrimSpace(s[:at])
	if zh && utf8.RuneCountInString(c) >= 2 || !zh && len(strings.Fields(c)) >= 2 {
		return c
	}
	return s
}

// cutWords is s cut to its first n words (and 10 characters a word),
// at a clause boundary ("and", a comma) in the second half when there is
// one, without a dangling "of", "and" or closing punctuation.
func cutWords(s string, n int) string {
	f := strings.Fields(s)
	cut := false
	if len(f) > n {
		at := n
		for j := n; j > n/2 && j > 1; j-- {
			if clauseWords[strings.ToLower(f[j])] || strings.ContainsAny(f[j-1][len(f[j-1])-1:], ",;:)") {
				at = j
				break
			}
		}
		f, cut = f[:at], true
	}
	s = strings.Join(f, " ")
	if utf8.RuneCountInString(s) > 10*n {
		s = cutWhole(s, 10*n)
		cut = true
	}
	return trimEnd(s, cut)
}

var clauseWords = map[string]bool{"and": true, "but": true, "while": true, "which": true, "who": true, "because": true,
	"since": true, "so": true, "or": true, "plus": true, "including": true, "-": true, "–": true, "—": true}

// cutRunes cuts s to at most max runes at a boundary between words: a
// space, a punctuation mark, or (in Chinese) between two characters,
// preferring a space or punctuation mark in the second half. It reports
// false when it had to cut inside a word.
func cutRunes(s string, max int) (string, bool) {
	r := []rune(s)
	if len(r) <= max {
		return s, true
	}
	hard, soft := -1, -1
	for i := max; i > 0; i-- {
		a, b := r[i-1], r[i]
		if hard < 0 && (unicode.IsSpace(a) || unicode.IsSpace(b) || strings.ContainsRune(clauseMarks, a)) {
			hard = i
		}
		if soft < 0 && (unicode.Is(unicode.Han, a) || unicode.Is(unicode.Han, b)) {
			soft = i
		}
	}
	switch {
	case hard >= max/2 || hard > 0 && soft < 0:
		return string(r[:hard]), true
	case soft > 0:
		return string(r[:soft]), true
	}
	return string(r[:max]), false
}

// cutWhole is cutRunes, except that a first word a little longer than max
// is kept whole rather than cut.
func cutWhole(s string, max int) string {
	c, ok := cutRunes(s, max)
	if ok {
		return c
	}
	r := []rune(s)
	for i := max; i < len(r) && i <= max+24; i++ {
		if unicode.IsSpace(r[i]) || strings.ContainsRune(clauseMarks, r[i]) || unicode.Is(unicode.Han, r[i]) {
			return string(r[:i])
		}
	}
	return c
}

const clauseMarks = ",;:.!?，；：、。！？"

var stopWords = map[string]bool{"a": true, "an": true, "the": true, "of": true, "for": true, "to": true, "in": true,
	"on": true, "at": true, "with": true, "and": true, "or": true, "by": true, "from": true, "as": true, "our": true,
	"your": true, "their": true, "its": true, "is": true, "are": true, "that": true, "which": true, "who": true,
	"&": true, "but": true, "into": true, "than": true, "so": true, "we": true, "you": true}

// trimEnd drops closing spaces and punctuation and, after a cut, a word
// that cannot end a phrase ("of", "the"; "的", "和" in Chinese).
func trimEnd(s string, cut bool) string {
	for {
		old := s
		s = strings.TrimRightFunc(s, func(r rune) bool {
			return unicode.IsSpace(r) || strings.ContainsRune(".,;:!?…。，；：！？、-–—/&(（", r)
		})
		if cut {
			i := strings.LastIndexFunc(s, unicode.IsSpace)
			if last := s[i+1:]; stopWords[strings.ToLower(last)] {
				s = s[:i+1]
			} else if r, n := utf8.DecodeLastRuneInString(s); n > 0 && strings.ContainsRune("的和与及或在对把被从向", r) {
				s = s[:len(s)-n]
			}
		}
		if s == old {
			return s
		}
	}
}

// lowerFirst lowers the first letter of s unless its first word is an
// acronym or a name spelled with capitals inside ("CFOs", "SaaS", "B2B").
func lowerFirst(s string) string {
	if first, _, _ := strings.Cut(s, " "); innerCaps(first) {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToLower(r)) + s[n:]
}

// meaningful reports whether s has a letter or a digit.
func meaningful(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}

// innerCaps reports whether word has a capital or a digit after its first
// letter.
func innerCaps(word string) bool {
	for i, r := range word {
		if i > 0 && (unicode.IsUpper(r) || unicode.IsDigit(r)) {
			return true
		}
	}
	return false
}

func nonEmpty(ss []string) []string {
	out := ss[:0]
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
