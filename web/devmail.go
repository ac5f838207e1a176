package web

import (
	"net/http"
	"strings"
	"time"

	"github.com/apprun/apprun/port"
)

// DevMail is dev mode's outbox: the mail the node would have sent,
// newest first.
type DevMail interface {
	Sent() []port.SentMail
}

// devMailView is one kept mail as the page shows it: its text by lines,
// each link a link.
type devMailView struct {
	To, From, Subject string
	At                time.Time
	Lines             []devMailLine
}

type devMailLine struct {
	Text string
	Link bool
}

// devMailPage is GET /dev/mail: in dev mode, the mail the node sent,
// newest first, so that a reset link can be followed without a mail
// server. Elsewhere there is no such page.
func (s *Site) devMailPage(w http.ResponseWriter, r *http.Request) {
	if s.cfg.DevMail == nil {
		s.notFound(w, r)
		return
	}
	var list []devMailView
	for _, m := range s.cfg.DevMail.Sent() {
		v := devMailView{To: m.To, From: m.From, Subject: m.Subject, At: m.At}
		for _, line := range strings.Split(strings.TrimRight(m.Text, "\n"), "\n") {
			link := strings.HasPrefix(line, "http://") || strings.HasPrefix(line, "https://")
			v.Lines = append(v.Lines, devMailLine{Text: line, Link: link && !strings.ContainsAny(line, " \t")})
		}
		list = append(list, v)
	}
	s.render(w, r, http.StatusOK, "devmail", "Mail sent (dev mode)", list)
}
