package web

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/apprun/apprun/edge"
	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/httpapi"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service"
	"github.com/gorilla/mux"
	"github.com/nats-io/nats.go/jetstream"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Engine is what the website needs of the domain.
type Engine interface {
	Catalog() *engine.Catalog
	SignUp(ctx context.Context, email, password string, credits int64) (string, uint64, error)
	SignIn(ctx context.Context, email, password string) (string, error)
	CreateKey(ctx context.Context, accountID, name string) (service.NewKey, error)
	RevokeKey(ctx context.Context, keyID string) (uint64, error)
	CreateRun(ctx context.Context, req service.CreateRunRequest) (service.CreatedRun, error)
	CancelRun(ctx context.Context, accountID, runNo string) (engine.Run, uint64, error)
	RunDetail(ctx context.Context, accountID, runNo string) (service.RunDetail, error)
	RunRecord(ctx context.Context, accountID, runNo string) (service.RunRecord, error)
	Compare(ctx context.Context, accountID, runNo, with string) (service.Comparison, error)
	PasswordResetTicket(ctx context.Context, email string) (service.ResetTicket, error)
	ResetPassword(ctx context.Context, t service.ResetTicket, password string) (uint64, error)
	// Brand contexts (brands.go).
	CreateBrandContext(ctx context.Context, accountID string, bc engine.BrandContext) (engine.BrandContext, uint64, error)
	UpdateBrandContext(ctx context.Context, accountID, id string, edit engine.BrandEdit) (engine.BrandContext, uint64, error)
	DeleteBrandContext(ctx context.Context, accountID, id string) (uint64, error)
	// Webhooks (webhooks.go).
	WebhookEndpoints(ctx context.Context, accountID string) ([]service.WebhookEndpoint, uint64, error)
	AddWebhookEndpoint(ctx context.Context, accountID, url string) (service.WebhookEndpoint, error)
	RemoveWebhookEndpoint(ctx context.Context, accountID, id string) error
	WebhookSecret(ctx context.Context, accountID string) (string, error)
	WebhookSecretMade(ctx context.Context, accountID string) (string, bool, error)
	RotateWebhookSecret(ctx context.Context, accountID string) (string, error)
	Deliveries(ctx context.Context, accountID string, limit int) ([]service.Delivery, error)
	Redeliver(ctx context.Context, accountID, runNo string) error
}

// Reads is what the website reads: the projections.
type Reads interface {
	Account(id string) (ledger.Account, error)
	Statement(accountID string, before uint64, limit int) ([]ledger.Line, uint64, error)
	RunsOf(accountID string, before uint64, limit int) ([]engine.Run, uint64, error)
	Run(runNo string) (engine.Run, error)
	KeysOf(accountID string) ([]engine.Key, error)
	Price(slug string) (engine.Price, error)
	BrandContext(ctx context.Context, id string) (engine.BrandContext, error)
	BrandContextsOf(accountID string) ([]engine.BrandContext, error)
	WaitFor(ctx context.Context, seq uint64) error
}

// Config configures the website.
type Config struct {
	Engine Engine
	Reads  Reads
	// Sessions is the sessions bucket (SessionBucket).
	Sessions jetstream.KeyValue
	// SessionTTL is how long a sign-in lasts (default 7 days).
	SessionTTL time.Duration
	// SignupCredits is the welcome balance of a new account.
	SignupCredits int64
	// SecureCookies marks the session cookie Secure even when this node
	// sees plain HTTP (TLS ends at a proxy in front of it).
	SecureCookies bool
	// Examples are example inputs by App slug, for the reference pages,
	// and ExampleOutputs the outputs the pages show rendered.
	Examples       map[string]map[string]any
	ExampleOutputs map[string]json.RawMessage
	// Seller sells Credits on the Credits page (nil or not selling: the
	// page says how Credits are added).
	Seller Seller
	// Mailer sends password reset links, kept in ResetTokens (ResetBucket);
	// without both, the site says reset by email is not set up. PublicURL,
	// when set, is the origin of the links (else the request's).
	Mailer      port.Mailer
	ResetTokens jetstream.KeyValue
	PublicURL   string
	// DevMail, in dev mode, is the outbox shown at /dev/mail (nil: no
	// such page).
	DevMail DevMail
	Logger  *slog.Logger
	// Now is the clock (tests move it).
	Now func() time.Time
}

// Site is the website's handler.
type Site struct {
	cfg      Config
	sessions *sessions
	pages    map[string]*template.Template
	router   *mux.Router
	throttle *throttle
	// hashSlots bounds the bcrypt work done at once (throttle.go).
	hashSlots chan struct{}
	handler   http.Handler
	reset     passwordReset // password.go
}

// New builds the website.
func New(cfg Config) (*Site, error) {
	if cfg.Engine == nil || cfg.Reads == nil || cfg.Sessions == nil {
		return nil, errors.New("web: Engine, Reads and Sessions are required")
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 7 * 24 * time.Hour
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Site{cfg: cfg, sessions: &sessions{kv: cfg.Sessions, ttl: cfg.SessionTTL, now: cfg.Now},
		router: mux.NewRouter(), throttle: newThrottle(cfg.Now),
		hashSlots: make(chan struct{}, hashSlots)}
	if cfg.ResetTokens != nil {
		s.reset.tokens = &resetTokens{kv: cfg.ResetTokens, now: cfg.Now}
	}
	var err error
	if s.pages, err = parsePages(); err != nil {
		return nil, err
	}
	s.routes()
	// Every form is a same-origin POST: a cross-origin one (a CSRF
	// attempt) is refused before any handler runs.
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.problem(w, r, http.StatusForbidden, "This form was sent from another site, so it was refused. Go back, reload the page and send it again.")
	}))
	s.handler = s.headers(cop.Handler(s.router))
	return s, nil
}

// Use puts mw around every page the site serves, as the router's
// middleware (so that mux.CurrentRoute names the page's route inside it)
// and around its not-found and method-not-allowed answers, which the
// router's middleware does not reach. The node counts the site's requests
// in its metrics with it.
func (s *Site) Use(mw func(http.Handler) http.Handler) {
	s.router.Use(mw)
	s.router.NotFoundHandler = mw(s.router.NotFoundHandler)
	s.router.MethodNotAllowedHandler = mw(s.router.MethodNotAllowedHandler)
}

// ServeHTTP implements http.Handler.
func (s *Site) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// static serves the site's own files, and only files: a directory or a
// missing file is the site's 404 page (http.FileServer would list the
// directory, and answer a plain-text 404).
func (s *Site) static() http.Handler {
	files := http.StripPrefix("/", http.FileServerFS(staticFS))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if st, err := fs.Stat(staticFS, strings.TrimPrefix(r.URL.Path, "/")); err != nil || st.IsDir() {
			s.notFound(w, r)
			return
		}
		files.ServeHTTP(w, r)
	})
}

// notFound is the site's 404 page.
func (s *Site) notFound(w http.ResponseWriter, r *http.Request) {
	s.problem(w, r, http.StatusNotFound, "There is no page here.")
}

func (s *Site) routes() {
	r := s.router
	r.NotFoundHandler = http.HandlerFunc(s.notFound)
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", httpapi.AllowedMethods(s.router, r))
		s.problem(w, r, http.StatusMethodNotAllowed, "This page does not take that kind of request ("+r.Method+").")
	})
	r.PathPrefix("/static/").Handler(s.static()).Methods(http.MethodGet)
	r.HandleFunc("/", s.home).Methods(http.MethodGet)
	r.HandleFunc("/signup", s.signUpPage).Methods(http.MethodGet)
	r.HandleFunc("/signup", s.signUp).Methods(http.MethodPost)
	r.HandleFunc("/signin", s.signInPage).Methods(http.MethodGet)
	r.HandleFunc("/signin", s.signIn).Methods(http.MethodPost)
	r.HandleFunc("/signout", s.signOut).Methods(http.MethodPost)
	r.HandleFunc("/signout", s.signOutPage).Methods(http.MethodGet)
	r.HandleFunc("/password/forgot", s.forgotPage).Methods(http.MethodGet)
	r.HandleFunc("/password/forgot", s.forgot).Methods(http.MethodPost)
	r.HandleFunc("/password/sent", s.sentPage).Methods(http.MethodGet)
	r.HandleFunc("/password/reset", s.resetPage).Methods(http.MethodGet)
	r.HandleFunc("/password/reset", s.setPassword).Methods(http.MethodPost)
	r.HandleFunc("/password/changed", s.signedIn(s.changedPage)).Methods(http.MethodGet)
	r.HandleFunc("/dev/mail", s.devMailPage).Methods(http.MethodGet)
	r.HandleFunc("/favicon.ico", s.favicon).Methods(http.MethodGet)
	r.HandleFunc("/settings/keys", s.signedIn(s.keysPage)).Methods(http.MethodGet)
	r.HandleFunc("/settings/keys", s.signedIn(s.createKey)).Methods(http.MethodPost)
	r.HandleFunc("/settings/keys/{key_id}/revoke", s.signedIn(s.revokePage)).Methods(http.MethodGet)
	r.HandleFunc("/settings/keys/{key_id}/revoke", s.signedIn(s.revokeKey)).Methods(http.MethodPost)
	r.HandleFunc("/settings/brands", s.signedIn(s.brandsPage)).Methods(http.MethodGet)
	r.HandleFunc("/settings/brands", s.signedIn(s.createBrand)).Methods(http.MethodPost)
	r.HandleFunc("/settings/brands/{brand_id}", s.signedIn(s.brandPage)).Methods(http.MethodGet)
	r.HandleFunc("/settings/brands/{brand_id}", s.signedIn(s.updateBrand)).Methods(http.MethodPost)
	r.HandleFunc("/settings/brands/{brand_id}/delete", s.signedIn(s.deleteBrandPage)).Methods(http.MethodGet)
	r.HandleFunc("/settings/brands/{brand_id}/delete", s.signedIn(s.deleteBrand)).Methods(http.MethodPost)
	r.HandleFunc("/settings/webhooks", s.signedIn(s.webhooksPage)).Methods(http.MethodGet)
	r.HandleFunc("/settings/webhooks/endpoints", s.signedIn(s.addEndpoint)).Methods(http.MethodPost)
	r.HandleFunc("/settings/webhooks/endpoints/{endpoint_id}/remove", s.signedIn(s.removeEndpointPage)).Methods(http.MethodGet)
	r.HandleFunc("/settings/webhooks/endpoints/{endpoint_id}/remove", s.signedIn(s.removeEndpoint)).Methods(http.MethodPost)
	r.HandleFunc("/settings/webhooks/secret/rotate", s.signedIn(s.rotateSecretPage)).Methods(http.MethodGet)
	r.HandleFunc("/settings/webhooks/secret/rotate", s.signedIn(s.rotateSecret)).Methods(http.MethodPost)
	r.HandleFunc("/settings/webhooks/deliveries/{run_no}/redeliver", s.signedIn(s.redeliver)).Methods(http.MethodPost)
	r.HandleFunc("/credits", s.signedIn(s.creditsPage)).Methods(http.MethodGet)
	r.HandleFunc("/credits/statement.csv", s.signedIn(s.statementCSV)).Methods(http.MethodGet)
	r.HandleFunc("/credits/buy", s.signedIn(s.buy)).Methods(http.MethodPost)
	r.HandleFunc("/usage", s.signedIn(s.usagePage)).Methods(http.MethodGet)
	r.HandleFunc("/runs", s.signedIn(s.runsPage)).Methods(http.MethodGet)
	r.HandleFunc("/runs/{run_no}", s.signedIn(s.runPage)).Methods(http.MethodGet)
	r.HandleFunc("/runs/{run_no}/cancel", s.signedIn(s.cancelPage)).Methods(http.MethodGet)
	r.HandleFunc("/runs/{run_no}/cancel", s.signedIn(s.cancelRun)).Methods(http.MethodPost)
	r.HandleFunc("/runs/{run_no}/record.json", s.signedIn(s.downloadRecord)).Methods(http.MethodGet)
	r.HandleFunc("/runs/{run_no}/compare", s.signedIn(s.comparePage)).Methods(http.MethodGet)
	r.HandleFunc("/apps", s.appsPage).Methods(http.MethodGet)
	r.HandleFunc("/apps/{slug}", s.appPage).Methods(http.MethodGet)
	r.HandleFunc("/apps/{slug}/runs", s.signedIn(s.startRun)).Methods(http.MethodPost)
}

// headers sets the headers every page carries (the edge in front of every
// surface, httpapi.Edge, bounds the request).
func (s *Site) headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self' https://checkout.stripe.com")
		next.ServeHTTP(w, r)
	})
}

// SessionAccount returns the account of the request's session: the API
// accepts it on the event stream, so the browser's EventSource can follow
// a run.
func (s *Site) SessionAccount(r *http.Request) (string, bool) {
	sess, err := s.sessions.of(r)
	return sess.AccountID, err == nil
}

// viewer is who is looking at a page.
type viewer struct {
	AccountID string
	Email     string
}

type ctxKey struct{}

// signedIn runs h for a signed-in browser, and sends anyone else to sign in.
func (s *Site) signedIn(h func(http.ResponseWriter, *http.Request, viewer)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess, err := s.sessions.of(r)
		if err != nil {
			if !errors.Is(err, errNoSession) {
				s.cfg.Logger.Error("reading a session", "err", err)
				s.problem(w, r, http.StatusServiceUnavailable, "Sessions are unavailable for a moment. Try again shortly.")
				return
			}
			if r.Method == http.MethodGet {
				http.Redirect(w, r, signInFor(r), http.StatusSeeOther)
				return
			}
			s.problem(w, r, http.StatusUnauthorized, "Your session has ended. Sign in again, then send the form again.")
			return
		}
		// Its refusals count against the session, its connection is a
		// known caller's (httpapi's refusal budgets and connection caps).
		httpapi.Known(w, r, service.SessionKeyID(sess.AccountID))
		v := viewer{AccountID: sess.AccountID, Email: sess.Email}
		h(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, v)), v)
	}
}

// viewerOf is the page's viewer, when signed in.
func (s *Site) viewerOf(r *http.Request) (viewer, bool) {
	if v, ok := r.Context().Value(ctxKey{}).(viewer); ok {
		return v, true
	}
	sess, err := s.sessions.of(r)
	if err != nil {
		return viewer{}, false
	}
	return viewer{AccountID: sess.AccountID, Email: sess.Email}, true
}

// page is what every template gets.
type page struct {
	Title  string
	Viewer *viewer
	// Balance is the viewer's Credits, shown in the header on every page.
	Balance *int64
	Nav     string
	Flash   string
	Problem string
	Data    any
}

func (s *Site) render(w http.ResponseWriter, r *http.Request, status int, name, title string, data any, problem ...string) {
	p := page{Title: title, Nav: name, Data: data}
	if v, ok := s.viewerOf(r); ok {
		p.Viewer = &v
		if a, err := s.cfg.Reads.Account(v.AccountID); err == nil {
			p.Balance = &a.Balance
		}
	}
	if len(problem) > 0 {
		p.Problem = problem[0]
	}
	t, ok := s.pages[name]
	if !ok {
		panic("web: no page " + name)
	}
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, "layout", p); err != nil {
		s.cfg.Logger.Error("rendering a page", "page", name, "err", err)
		http.Error(w, "The page could not be shown.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// problem shows a page that says what went wrong. A refused form's
// connection closes with it: its body may be unread, and net/http would
// read on to drain it for as long as the client takes.
func (s *Site) problem(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	}
	s.render(w, r, status, "problem", http.StatusText(status), nil, msg)
}

// Refuse is the site's edge.Surface.Refuse: a request the edge refuses
// before the site's router sees it is shown the site's problem page,
// with the site's headers, never the API's JSON a browser would show raw.
func (s *Site) Refuse(w http.ResponseWriter, r *http.Request, refusal edge.Refusal) {
	msg := refusal.Message
	if refusal.Reason == edge.ReasonTooLarge {
		msg = fmt.Sprintf("This form is larger than %d KiB, more than any form here takes: shorten what you pasted and send it again. Nothing was charged.", refusal.Limit>>10)
	}
	s.headers(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.problem(w, r, refusal.Status, msg) })).ServeHTTP(w, r)
}

// FormBodyLimit is the most a form of the site takes.
const FormBodyLimit = 64 << 10

// ReadsUnknown is the site's edge.Surface.ReadsUnknown: sign-in,
// sign-up and password reset forms are read before their sender is known
// (the credentials, or the reset link, are the form), within forms.
func ReadsUnknown(forms *edge.Budget) func(r *http.Request) *edge.Budget {
	return func(r *http.Request) *edge.Budget {
		if r.Method == http.MethodPost && (r.URL.Path == "/signin" || r.URL.Path == "/signup" ||
			r.URL.Path == "/password/forgot" || r.URL.Path == "/password/reset") {
			return forms
		}
		return nil
	}
}

// fail shows a domain error as a problem page with its status.
func (s *Site) fail(w http.ResponseWriter, r *http.Request, err error) {
	var e *engine.Error
	if errors.As(err, &e) {
		s.problem(w, r, httpapi.StatusOf(e.Code), e.Message)
		return
	}
	s.cfg.Logger.Error("website request failed", "path", r.URL.Path, "err", err)
	s.problem(w, r, http.StatusInternalServerError, "Something went wrong on our side. Nothing was charged; try again.")
}

// lineLabels name statement line types for people.
var lineLabels = map[string]string{"opening_grant": "Opening grant", "grant": "Grant", "adjustment": "Adjustment", "charge": "Charge",
	"refund": "Refund", "purchase": "Purchase", "revocation": "Revocation", "dispute": "Dispute", "reinstatement": "Dispute won"}

var funcs = template.FuncMap{
	"lineLabel": func(t string) string {
		if l, ok := lineLabels[t]; ok {
			return l
		}
		return t
	},
	"when": func(t any) string {
		switch v := t.(type) {
		case time.Time:
			if v.IsZero() {
				return "never"
			}
			return v.UTC().Format("2006-01-02 15:04:05 UTC")
		case *time.Time:
			if v == nil || v.IsZero() {
				return "—"
			}
			return v.UTC().Format("2006-01-02 15:04:05 UTC")
		}
		return fmt.Sprint(t)
	},
	// credits is an amount with its unit: "1 Credit", "1,000 Credits";
	// number is the bare figure, for table cells.
	"credits":     creditsOf,
	"creditsWere": creditsWere,
	"money":       money,
	"number":      groupThousands,
	"plural":      plural,
	"nameBreaks":  nameBreaks,
	// signed shows a statement amount: +50, −25 (a true minus sign).
	"signed": func(n int64) string {
		if n < 0 {
			return "−" + groupThousands(-n)
		}
		return "+" + groupThousands(n)
	},
}

// parsePages parses each page with the layout.
func parsePages() (map[string]*template.Template, error) {
	// Files named _*.html hold parts several pages share; every page
	// has them.
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/_*.html")
	if err != nil {
		return nil, err
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if name == "layout" || strings.HasPrefix(name, "_") {
			continue
		}
		t, err := template.Must(layout.Clone()).ParseFS(templateFS, n)
		if err != nil {
			return nil, fmt.Errorf("web: %s: %w", n, err)
		}
		out[name] = t
	}
	return out, nil
}

// zeroDecimal are the currencies Stripe counts in whole units.
var zeroDecimal = map[string]bool{"bif": true, "clp": true, "djf": true, "gnf": true, "jpy": true, "kmf": true, "krw": true,
	"mga": true, "pyg": true, "rwf": true, "ugx": true, "vnd": true, "vuv": true, "xaf": true, "xof": true, "xpf": true}

// money is a price in the currency's smallest unit, for people: "5.00 USD".
func money(amount int64, currency string) string {
	if zeroDecimal[currency] {
		return fmt.Sprintf("%d %s", amount, strings.ToUpper(currency))
	}
	return fmt.Sprintf("%d.%02d %s", amount/100, amount%100, strings.ToUpper(currency))
}

// creditsOf is n with its unit, singular for one.
func creditsOf(n int64) string {
	if n == 1 || n == -1 {
		return groupThousands(n) + " Credit"
	}
	return groupThousands(n) + " Credits"
}

// creditsWere says an amount came back: "1 Credit was", "25 Credits were".
func creditsWere(n int64) string {
	if n == 1 {
		return "1 Credit was"
	}
	return creditsOf(n) + " were"
}

// plural is n with its noun: "1 run", "3 runs".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%s %s", groupThousands(int64(n)), many)
}

func groupThousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// favicon answers the browser's request for /favicon.ico with the SVG
// icon (every page also links it).
func (s *Site) favicon(w http.ResponseWriter, r *http.Request) {
	b, err := staticFS.ReadFile("static/favicon.svg")
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "public, max-age=86400")
	_, _ = w.Write(b)
}

// signOutPage answers a GET of /signout (a typed address, an old link)
// with a page that has the sign-out button, instead of a bare 405.
func (s *Site) signOutPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "signout", "Sign out", nil)
}
