package web

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/httpapi"
	"github.com/apprun/apprun/service"
)

// maxNext is the longest return path kept across sign-in: a longer next
// is not followed (safeNext), nor echoed (signInFor).
const maxNext = 2048

// signInFor is the sign-in page that returns to r's path and query. The
// Location header echoes what the request sent, so it is bounded: a
// return over maxNext bytes once escaped returns to the path alone, and
// a path over it too to the dashboard (no next).
func signInFor(r *http.Request) string {
	for _, next := range []string{r.URL.RequestURI(), r.URL.EscapedPath()} {
		if q := url.QueryEscape(next); len(q) <= maxNext {
			return "/signin?next=" + q
		}
	}
	return "/signin"
}

// safeNext keeps a post-sign-in redirect on this site: a path of this
// origin, as a browser would resolve it, or / (the dashboard). Browsers
// follow the WHATWG URL rules: they drop tabs and newlines anywhere, strip leading
// control characters and spaces, and read a backslash as a slash, so
// "/\t/evil.com" and "/\\evil.com" are "//evil.com", another host. Any
// such character is refused outright, then the rest must parse as a bare
// path that does not start with two slashes.
func safeNext(next string) string {
	const fallback = "/"
	if next == "" || len(next) > maxNext {
		return fallback
	}
	for _, c := range next {
		if c < 0x20 || c == 0x7f || c == '\\' || c == ' ' {
			return fallback
		}
	}
	if next[0] != '/' || strings.HasPrefix(next, "//") {
		return fallback
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") ||
		strings.HasPrefix(u.Path, "//") {
		return fallback
	}
	return next
}

func (s *Site) home(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.viewerOf(r); ok {
		s.signedIn(s.dashboard)(w, r)
		return
	}
	cat, err := s.catalog(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "home", "apprun", map[string]any{"SignupCredits": s.cfg.SignupCredits, "Catalog": cat,
		"FirstRun": firstRun{Credits: s.cfg.SignupCredits}})
}

type authForm struct {
	Email, Next string
}

func (s *Site) signUpPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "signup", "Sign up", map[string]any{"Form": authForm{}, "SignupCredits": s.cfg.SignupCredits,
		"MinPassword": service.MinPassword})
}

func (s *Site) signUp(w http.ResponseWriter, r *http.Request) {
	email, password := r.PostFormValue("email"), r.PostFormValue("password")
	data := map[string]any{"Form": authForm{Email: email}, "SignupCredits": s.cfg.SignupCredits, "MinPassword": service.MinPassword}
	if !s.throttle.reserve(budget{"signup:" + clientIP(r), 10}) {
		s.render(w, r, http.StatusTooManyRequests, "signup", "Sign up", data, "Too many sign-ups from here. Try again in a few minutes.")
		return
	}
	if password != r.PostFormValue("password_again") {
		s.render(w, r, http.StatusUnprocessableEntity, "signup", "Sign up", data, "The two passwords differ.")
		return
	}
	var id string
	var seq uint64
	err := s.hashing(r.Context(), func() (err error) {
		id, seq, err = s.cfg.Engine.SignUp(r.Context(), email, password, s.cfg.SignupCredits)
		return err
	})
	if errors.Is(err, errHashBusy) {
		s.render(w, r, http.StatusServiceUnavailable, "signup", "Sign up", data, "Too many sign-ups at this moment. Try again in a few seconds.")
		return
	}
	var e *engine.Error
	if errors.As(err, &e) {
		s.render(w, r, httpapi.StatusOf(e.Code), "signup", "Sign up", data, accountWords(e))
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	_ = s.cfg.Reads.WaitFor(r.Context(), seq) // the next page reads the new account
	if err := s.sessions.start(r.Context(), w, r, s.cfg.SecureCookies, id, strings.ToLower(strings.TrimSpace(email))); err != nil {
		s.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/apps?welcome=1", http.StatusSeeOther)
}

func (s *Site) signInPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "signin", "Sign in", map[string]any{"Form": authForm{Next: safeNext(r.URL.Query().Get("next"))}})
}

// signIn checks the credentials. A try is reserved before the password
// is checked, atomically, from two budgets: the (email, client address)
// pair's (5 tries, then one a minute) and the client address's (20, then
// one every 15 seconds); a right password gives its try back. So
// concurrent guesses cannot outrun the count, and a stranger elsewhere
// cannot lock the owner out: the owner's address has its own budget. The
// bcrypt work itself waits for one of a few places (hashSlots).
func (s *Site) signIn(w http.ResponseWriter, r *http.Request) {
	email := strings.ToLower(strings.TrimSpace(r.PostFormValue("email")))
	form := authForm{Email: email, Next: safeNext(r.PostFormValue("next"))}
	data := map[string]any{"Form": form}
	tries := []budget{{"signin:" + email + "|" + clientIP(r), 5}, {"signin-ip:" + clientIP(r), 20}}
	if !s.throttle.reserve(tries...) {
		s.render(w, r, http.StatusTooManyRequests, "signin", "Sign in", data, "Too many failed sign-ins. Wait a minute, then try again.")
		return
	}
	var id string
	err := s.hashing(r.Context(), func() (err error) {
		id, err = s.cfg.Engine.SignIn(r.Context(), email, r.PostFormValue("password"))
		return err
	})
	if errors.Is(err, errHashBusy) {
		s.throttle.refund(tries...)
		s.render(w, r, http.StatusServiceUnavailable, "signin", "Sign in", data, "Too many sign-ins at this moment. Try again in a few seconds.")
		return
	}
	if errors.Is(err, service.ErrBadCredentials) {
		s.render(w, r, http.StatusUnauthorized, "signin", "Sign in", data, "Wrong email or password.")
		return
	}
	s.throttle.refund(tries...) // not a wrong password: the try is given back
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.sessions.start(r.Context(), w, r, s.cfg.SecureCookies, id, email); err != nil {
		s.fail(w, r, err)
		return
	}
	http.Redirect(w, r, form.Next, http.StatusSeeOther)
}

func (s *Site) signOut(w http.ResponseWriter, r *http.Request) {
	s.sessions.end(w, r)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// clientIP is the address the request came from (the proxy's, behind one).
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
