// Package mailer sends apprun's mail (the website's password reset
// links) behind port.Mailer: over SMTP with github.com/wneessen/go-mail,
// or, in dev mode without SMTP, into an Outbox kept in memory that the
// website shows at /dev/mail.
//
// SMTP goes through a maintained library rather than net/smtp by hand
// because what it gets right is easy to get subtly wrong: the TLS policy
// (implicit TLS, STARTTLS required, and no falling back to plain text on
// a network), authentication (the best mechanism the server offers,
// never PLAIN or LOGIN in the clear to a remote host), and the message
// itself (a multipart/alternative text and HTML body in quoted-printable,
// encoded headers, Date and Message-ID).
package mailer
