package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/apprun/apprun/apps"
	"github.com/apprun/apprun/billing"
	"github.com/apprun/apprun/edge"
	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/httpapi"
	"github.com/apprun/apprun/llm"
	"github.com/apprun/apprun/outbound"
	"github.com/apprun/apprun/service"
)

// Config is everything `apprun serve` is configured with.
type Config struct {
	Addr    string
	DataDir string
	NATSURL string
	// NATSListen opens a client port on the embedded server ("" = none).
	NATSListen string
	// NATSCreds, NATSToken, NATSCA, NATSCert and NATSKey authenticate to an
	// external NATS (a creds file, a token, TLS CA and client certificate).
	NATSCreds, NATSToken, NATSCA, NATSCert, NATSKey string
	// ServerName, ClusterName, ClusterListen and Routes make the embedded
	// server a member of a JetStream cluster of apprun nodes.
	ServerName    string
	ClusterName   string
	ClusterListen string
	Routes        []string
	// ClusterSecret (APPRUN_CLUSTER_SECRET) authenticates routes and
	// clients of an embedded server that opens a port: required then.
	ClusterSecret string
	// AdminToken (APPRUN_ADMIN_TOKEN) is the admin token named "admin",
	// AdminTokens (APPRUN_ADMIN_TOKENS) more, by name: the admin API
	// records the name as the actor of what each does.
	AdminToken  string
	AdminTokens map[string]string
	// LedgerKeyFile (APPRUN_LEDGER_SIGNING_KEY) is the Ed25519 key that
	// signs the ledger (signingkey.go): a file outside the data directory.
	LedgerKeyFile string
	Dev           bool
	Limits        engine.Limits
	Heartbeat     time.Duration
	// StreamsPerKey caps open event streams per API key and node.
	StreamsPerKey int
	// StreamsPerAccount caps them per account (all its keys) and node
	// (default twice StreamsPerKey).
	StreamsPerAccount int
	// Conns caps the node's connections, and those of one client address
	// that have not authenticated (APPRUN_MAX_CONNS, default the
	// descriptor limit less 1024; APPRUN_CONNS_PER_ADDR, default 128).
	Conns edge.ConnLimits
	// Refusals bounds refused requests per API key (APPRUN_REFUSED_PER_MIN,
	// default 60) and, without a key, per client address
	// (APPRUN_ADDR_REFUSED_PER_MIN, default 120), a minute.
	Refusals httpapi.RefusalLimits
	// RequestTimeout bounds each non-streaming request (tests shorten it).
	RequestTimeout time.Duration
	// WriteWait bounds how long a write's answer waits for the read
	// models to show it (default 5s; tests shorten it).
	WriteWait time.Duration
	Replicas  int
	// AppTimeouts overrides Apps' timeouts by slug (APPRUN_APP_TIMEOUTS,
	// "slug=duration,slug=duration").
	AppTimeouts map[string]time.Duration
	// AppRetention overrides Apps' retention windows by slug
	// (APPRUN_APP_RETENTION), and RetentionSweep is how often expired runs
	// are removed (APPRUN_RETENTION_SWEEP, default 1m).
	AppRetention   map[string]time.Duration
	RetentionSweep time.Duration
	// CheckpointEvery is how often the ledger's signed checkpoint is
	// written, when account events came since the last
	// (APPRUN_LEDGER_CHECKPOINT_EVERY, default 1m).
	CheckpointEvery time.Duration
	// RerunModels are the models a rerun may ask for besides the
	// provider's configured one (APPRUN_RERUN_MODELS).
	RerunModels []string
	// NoRecord leaves runs' records out of their logs
	// (APPRUN_RUN_RECORD=off): only their created and streamed events.
	NoRecord bool
	// TestApps adds the test fixture Apps (APPRUN_TEST_APPS=1).
	TestApps bool
	// TestAmbiguousAdmissions > 0 leaves every n-th admission's outcome
	// unknown to the node (a test fault; needs TestApps).
	TestAmbiguousAdmissions int
	// AppsDir adds or replaces App definitions (APPRUN_APPS_DIR).
	AppsDir string
	// Model is the model provider (OPENAI_BASE_URL, OPENAI_API_KEY,
	// APPRUN_LLM_MODEL, APPRUN_LLM_JSON_MODE, APPRUN_LLM_MAX_ATTEMPTS);
	// no base URL means none: Apps that need a model are not runnable.
	Model llm.Config
	// SignupCredits is the website's welcome balance (APPRUN_SIGNUP_CREDITS),
	// SessionTTL how long a sign-in lasts (APPRUN_SESSION_TTL), and
	// SecureCookies marks the session cookie Secure behind a TLS proxy
	// (APPRUN_SECURE_COOKIES=1).
	SignupCredits int64
	SessionTTL    time.Duration
	SecureCookies bool
	// Webhooks configures webhook deliveries: loopback and private
	// receivers only with APPRUN_WEBHOOKS_ALLOW_PRIVATE=1 (or --dev).
	Webhooks service.WebhookConfig
	// StreamTokenTTL is how long a browser stream token works
	// (APPRUN_STREAM_TOKEN_TTL, default 10m).
	StreamTokenTTL time.Duration
	// SourcesAllowPrivate lets the tools that read a source (web pages,
	// sitemaps, feeds, changelogs) reach loopback and private addresses
	// (APPRUN_SOURCES_ALLOW_PRIVATE=1): for Apps that read an intranet, and
	// for trying a node with pages served on the same machine.
	SourcesAllowPrivate bool
	// PasswordCost is the bcrypt cost of the website's new passwords
	// (default bcrypt.DefaultCost). A test option: no flag or variable
	// sets it.
	PasswordCost int
	// SourceMaxBytes and SourceTimeout bound one fetch of a source by an
	// App's tool (APPRUN_SOURCE_MAX_BYTES, default 2 MiB;
	// APPRUN_SOURCE_TIMEOUT, default 15s). A source over either fails the
	// run with source_unavailable, refunded.
	SourceMaxBytes int64
	SourceTimeout  time.Duration
	// GitHubAPI and GitHubToken are where oss-growth reads repositories
	// (APPRUN_GITHUB_API_URL, GITHUB_TOKEN).
	GitHubAPI, GitHubToken string
	// Billing sells Credits through Stripe Checkout: the secret keys
	// (APPRUN_STRIPE_SECRET_KEY, APPRUN_STRIPE_WEBHOOK_SECRET; environment
	// only), the API base (APPRUN_STRIPE_API_BASE, for tests) and the packs
	// (APPRUN_CREDIT_PACKS). Without the keys nothing is sold.
	Billing billing.Config
	// PublicURL is where buyers come back to after Checkout
	// (APPRUN_PUBLIC_URL; default http:// + the listen address), and the
	// origin of the links in mail (required with SMTPURL).
	PublicURL string
	// SMTPURL and SMTPFrom are the mail server and the sender of the
	// website's password reset links (APPRUN_SMTP_URL, APPRUN_SMTP_FROM;
	// mail.go). Without them, dev mode keeps the mail in an outbox shown
	// at /dev/mail, and elsewhere reset by email is not offered.
	SMTPURL, SMTPFrom string
	// SiteClock is the website's clock (nil: time.Now). A test option
	// (tests move it past a reset link's lifetime): no flag sets it.
	SiteClock func() time.Time
	// Apps replaces the shipped catalog (tests add Apps that fail).
	Apps []engine.App
	// BeforeServe, when set, runs once the node is up and before its HTTP
	// server answers a request (a request that comes meanwhile waits): what
	// must be in place before the node is ready, such as dev mode's demo
	// account and its credentials file. An error stops the start.
	BeforeServe func(ctx context.Context, n *Node) error
	Logger      *slog.Logger
}

// PublicGitHubAPI is GitHub's own REST API, the default GitHubAPI.
const PublicGitHubAPI = "https://api.github.com"

// Catalog is the Apps the node runs: Apps, or the definitions (LoadApps),
// with the test fixture when TestApps is set and the timeouts and retention
// windows AppTimeouts and AppRetention give.
func (c Config) Catalog() ([]engine.App, error) {
	return c.catalog(false)
}

// ReplayCatalog is the catalog replays run: Catalog, but with every App
// runnable when no model is configured (a replay calls none).
func (c Config) ReplayCatalog() ([]engine.App, error) {
	return c.catalog(true)
}

func (c Config) catalog(replay bool) ([]engine.App, error) {
	list := c.Apps
	if list == nil {
		var err error
		if list, err = c.loadApps(replay); err != nil {
			return nil, err
		}
	}
	list = append([]engine.App(nil), list...)
	if c.TestApps {
		list = append(list, apps.TestSleepOn(c.ServerName))
	}
	for _, o := range []struct {
		what string
		by   map[string]time.Duration
		set  func(*engine.App, time.Duration)
	}{
		{"timeout", c.AppTimeouts, func(a *engine.App, d time.Duration) { a.Timeout = d }},
		{"retention", c.AppRetention, func(a *engine.App, d time.Duration) { a.Retention = d }},
	} {
		for slug, d := range o.by {
			found := false
			for i := range list {
				if list[i].Slug == slug {
					o.set(&list[i], d)
					found = true
				}
			}
			if !found {
				return nil, fmt.Errorf("config: %s for unknown App %q", o.what, slug)
			}
		}
	}
	return list, nil
}

// LoadApps is the catalog of definitions, shipped and from AppsDir, with
// the model provider when one is configured.
func (c Config) LoadApps() ([]engine.App, error) {
	return c.loadApps(false)
}

func (c Config) loadApps(replay bool) ([]engine.App, error) {
	// App tools reach the internet through the outbound check. Sources
	// come from users, so loopback and private addresses are refused
	// (but for a test's SourcesAllowPrivate). The GitHub API base is the
	// operator's own choice (a GitHub Enterprise, a test's fake), so one
	// set away from the public API may be private; users pick only the
	// repository's path on it.
	env := &apps.Env{GitHubAPI: c.GitHubAPI, GitHubToken: c.GitHubToken, SourceMaxBytes: c.SourceMaxBytes, SourceTimeout: c.SourceTimeout,
		HTTPClient:   outbound.FetchClient(c.SourcesAllowPrivate, 30*time.Second),
		GitHubClient: outbound.FetchClient(c.SourcesAllowPrivate || (c.GitHubAPI != "" && c.GitHubAPI != PublicGitHubAPI), 30*time.Second)}
	if c.Model.BaseURL != "" {
		mc := c.Model
		if mc.Logger == nil {
			mc.Logger = c.Logger
		}
		m, err := llm.New(mc)
		if err != nil {
			return nil, fmt.Errorf("config: model provider: %w", err)
		}
		env.Model = m
	} else if replay {
		env.Model = apps.ReplayOnly
	}
	return apps.Load(c.AppsDir, env)
}

func (c Config) validate() error {
	if c.DataDir == "" {
		return errors.New("config: data directory is required")
	}
	if c.AdminToken == "" && len(c.AdminTokens) == 0 {
		return errors.New("config: APPRUN_ADMIN_TOKEN or APPRUN_ADMIN_TOKENS is required outside dev mode")
	}
	if c.AdminToken != "" && len(c.AdminToken) < httpapi.MinAdminToken {
		return fmt.Errorf("config: APPRUN_ADMIN_TOKEN must be at least %d characters", httpapi.MinAdminToken)
	}
	for name, tok := range c.AdminTokens {
		switch {
		case !httpapi.AdminNamePattern.MatchString(name):
			return fmt.Errorf("config: APPRUN_ADMIN_TOKENS: the name %q: lower-case letters, digits, '.', '_' and '-', at most 32", name)
		case len(tok) < httpapi.MinAdminToken:
			return fmt.Errorf("config: APPRUN_ADMIN_TOKENS: the token named %s must be at least %d characters", name, httpapi.MinAdminToken)
		case name == "admin" && c.AdminToken != "":
			return errors.New("config: APPRUN_ADMIN_TOKENS names a token admin, which is APPRUN_ADMIN_TOKEN's name")
		case tok == c.AdminToken:
			return fmt.Errorf("config: APPRUN_ADMIN_TOKENS: the token named %s is APPRUN_ADMIN_TOKEN", name)
		}
	}
	if _, err := billing.New(c.Billing, nil); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return c.checkMail() // mail.go
}

// models are the models a rerun may ask for: the configured one and the
// operator's others; none without a provider.
func (c Config) models() []string {
	if c.Model.BaseURL == "" {
		return nil
	}
	return append([]string{c.Model.Model}, c.RerunModels...)
}
