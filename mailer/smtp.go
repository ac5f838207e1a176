package mailer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/apprun/apprun/port"
	gomail "github.com/wneessen/go-mail"
)

// TLS is how a connection to the SMTP server is encrypted.
type TLS int

const (
	// Implicit is TLS from the first byte (smtps://, port 465).
	Implicit TLS = iota
	// StartTLS upgrades the connection with STARTTLS and refuses a server
	// that does not offer it (smtp://, port 587).
	StartTLS
	// StartTLSIfOffered upgrades when the server offers STARTTLS and
	// goes on in plain text when it does not: smtp:// to a loopback
	// address only (a relay or a mail catcher on the same machine, where
	// no network lies between to strip the offer).
	StartTLSIfOffered
)

func (t TLS) String() string {
	return [...]string{"implicit TLS", "STARTTLS required", "STARTTLS if offered"}[t]
}

// Server is an SMTP server as an smtp:// or smtps:// URL names it.
type Server struct {
	Host string
	Port int
	TLS  TLS
	// User and Password authenticate, both or neither.
	User, Password string
}

// ParseURL reads smtp://[user:password@]host[:port] (STARTTLS required,
// port 587; to a loopback host, STARTTLS if offered) or
// smtps://[user:password@]host[:port] (implicit TLS, port 465). Its errors
// never repeat the password.
func ParseURL(raw string) (Server, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Server{}, errors.New("not a URL: want smtp://user:password@host:587 or smtps://user:password@host:465")
	}
	var s Server
	switch u.Scheme {
	case "smtp":
		s.TLS, s.Port = StartTLS, 587
	case "smtps":
		s.TLS, s.Port = Implicit, 465
	default:
		return Server{}, fmt.Errorf("the scheme %q: want smtp:// (STARTTLS) or smtps:// (TLS)", u.Scheme)
	}
	if s.Host = u.Hostname(); s.Host == "" {
		return Server{}, errors.New("no host: want smtp://host:587 or smtps://host:465")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return Server{}, fmt.Errorf("the port %q: want 1 to 65535", p)
		}
		s.Port = n
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return Server{}, errors.New("takes no path or parameters: only [user:password@]host[:port]")
	}
	if u.User != nil {
		s.User = u.User.Username()
		s.Password, _ = u.User.Password()
		if s.User == "" || s.Password == "" {
			return Server{}, errors.New("give both a user and a password (percent-encoded), or neither")
		}
	}
	if s.TLS == StartTLS && loopback(s.Host) {
		s.TLS = StartTLSIfOffered
	}
	return s, nil
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ParseFrom reads a sender address: "apprun <no-reply@example.com>" or
// "no-reply@example.com".
func ParseFrom(from string) (string, error) {
	a, err := mail.ParseAddress(from)
	if err != nil {
		return "", fmt.Errorf("%q is not an email address: want no-reply@example.com or \"Example <no-reply@example.com>\"", from)
	}
	return a.String(), nil
}

// SMTP sends mail through one SMTP server, one connection a mail.
type SMTP struct {
	server  Server
	from    string
	timeout time.Duration
}

// sendTimeout bounds the dial and each SMTP command of a send.
const sendTimeout = 20 * time.Second

// NewSMTP is a mailer sending from from through the server rawURL
// names (ParseURL, ParseFrom).
func NewSMTP(rawURL, from string) (*SMTP, error) {
	s, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	if from, err = ParseFrom(from); err != nil {
		return nil, err
	}
	return &SMTP{server: s, from: from, timeout: sendTimeout}, nil
}

// Server is the server the mailer sends through.
func (s *SMTP) Server() Server { return s.server }

// Send implements port.Mailer.
func (s *SMTP) Send(ctx context.Context, m port.Mail) error {
	msg := gomail.NewMsg(gomail.WithNoDefaultUserAgent())
	if err := msg.From(s.from); err != nil {
		return fmt.Errorf("mailer: from: %w", err)
	}
	if err := msg.To(m.To); err != nil {
		return fmt.Errorf("mailer: to: %w", err)
	}
	msg.Subject(m.Subject)
	msg.SetDate()
	msg.SetMessageID()
	msg.SetBodyString(gomail.TypeTextPlain, m.Text)
	if m.HTML != "" {
		msg.AddAlternativeString(gomail.TypeTextHTML, m.HTML)
	}
	opts := []gomail.Option{gomail.WithPort(s.server.Port), gomail.WithTimeout(s.timeout)}
	switch s.server.TLS {
	case Implicit:
		opts = append(opts, gomail.WithSSL())
	case StartTLS:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	case StartTLSIfOffered:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	}
	if s.server.User != "" {
		// The best mechanism the server offers; PLAIN and LOGIN only
		// over TLS or to a loopback host (go-mail refuses them else).
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover),
			gomail.WithUsername(s.server.User), gomail.WithPassword(s.server.Password))
	}
	c, err := gomail.NewClient(s.server.Host, opts...)
	if err != nil {
		return fmt.Errorf("mailer: %w", err)
	}
	if err := c.DialAndSendWithContext(ctx, msg); err != nil {
		return fmt.Errorf("mailer: send through %s:%d (%s): %w", s.server.Host, s.server.Port, s.server.TLS, err)
	}
	return nil
}
