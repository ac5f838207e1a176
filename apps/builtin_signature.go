package apps

import (
	"net/url"
	"strings"
	"unicode/utf8"
)

// The built-in writer's greeting and sign-off: the register of the
// brand's voice, and the sender as sender_context says.

// Greetings and closings, by the register of the brand's voice.
var greetings = map[string][2]string{
	"":       {"Hi {{first_name}},", "Best,"},
	"casual": {"Hey {{first_name}},", "Cheers,"},
	"formal": {"Hello {{first_name}},", "Kind regards,"},
	"direct": {"Hi {{first_name}},", "Thanks,"},
}

var greetingsZH = map[string][2]string{
	"":       {"{{first_name}}，您好：", "祝好，"},
	"casual": {"嗨，{{first_name}}：", "祝一切顺利！"},
	"formal": {"尊敬的{{first_name}}，您好：", "顺颂商祺"},
	"direct": {"{{first_name}}，您好：", "谢谢，"},
}

// voiceWords name the registers a brand voice can ask for; a voice that
// names none of them is taken as plain and direct.
var voiceWords = []struct {
	register string
	words    []string
}{
	{"casual", []string{"casual", "friendly", "playful", "warm", "relaxed", "informal", "conversational", "cheerful", "upbeat", "轻松", "亲切", "活泼", "友好", "随和", "幽默"}},
	{"formal", []string{"formal", "professional", "polished", "corporate", "respectful", "authoritative", "serious", "正式", "专业", "严谨", "稳重", "商务"}},
}

// registerOf is the register the voice names first.
func registerOf(voice string) string {
	v := strings.ToLower(strings.TrimSpace(voice))
	if v == "" {
		return ""
	}
	reg, at := "direct", -1
	for _, r := range voiceWords {
		for _, word := range r.words {
			if i := strings.Index(v, word); i >= 0 && (at < 0 || i < at) {
				reg, at = r.register, i
			}
		}
	}
	return reg
}

// signature is who signs: the sender context's name on one line and its
// role on the next ("Dana, co-founder of Acme Ledger"), with the brand's
// name when the sender context does not say it, and the brand's website;
// {{sender_name}} when the brief names no sender.
func (w *writer) signature(lvl int) string {
	name, role := splitSender(w.sender)
	name, role = w.part(name, 5, lvl), w.part(role, 12, lvl)
	if name == "" {
		name = senderPlaceholder
	}
	if lvl == len(scales)-1 { // the last resort for a body still too long: the name alone
		return name
	}
	lines := []string{name}
	brand := w.part(w.brandName, 6, lvl)
	if brand != "" && strings.Contains(strings.ToLower(w.sender), strings.ToLower(w.brandName)) {
		brand = ""
	}
	sep := ", "
	if w.zh {
		sep = "，"
	}
	switch {
	case role != "" && brand != "":
		lines = append(lines, role+sep+brand)
	case role != "":
		lines = append(lines, role)
	case brand != "":
		lines = append(lines, brand)
	}
	if site := website(w.website); site != "" {
		lines = append(lines, site)
	}
	return strings.Join(lines, "\n")
}

// website is the brand's website as a signature gives it: its address, or
// only its scheme and host when the address is long; "" when even that is.
func website(s string) string {
	s = strings.Join(strings.Fields(s), "")
	if utf8.RuneCountInString(s) <= 40 {
		return s
	}
	if u, err := url.Parse(s); err == nil && u.Host != "" && utf8.RuneCountInString(u.Host) <= 40 {
		return u.Scheme + "://" + u.Host
	}
	if host, _, _ := strings.Cut(s, "/"); !strings.Contains(host, ":") && utf8.RuneCountInString(host) <= 40 {
		return host // "northwind.example/a/long/path"
	}
	return ""
}

// splitSender splits "Dana, co-founder of Acme Ledger" into the name and
// the role, at the first comma (or dash, or bar).
func splitSender(s string) (name, role string) {
	at, width := -1, 0
	for _, sep := range []string{",", "，", " - ", " – ", " — ", "|"} {
		if i := strings.Index(s, sep); i >= 0 && (at < 0 || i < at) {
			at, width = i, len(sep)
		}
	}
	if at < 0 {
		return s, ""
	}
	return strings.TrimSpace(s[:at]), strings.TrimSpace(s[at+width:])
}
