package main

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/apprun/apprun/billing"
	"github.com/apprun/apprun/llm"
	"github.com/apprun/apprun/node"
)

// parseDurations reads "slug=duration,slug=duration".
func parseDurations(s string) (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		slug, ds, ok := strings.Cut(part, "=")
		d, err := time.ParseDuration(strings.TrimSpace(ds))
		if !ok || err != nil || d <= 0 {
			return nil, fmt.Errorf("%q: want slug=duration, for example cold-email-writer=900s", part)
		}
		out[strings.TrimSpace(slug)] = d
	}
	return out, nil
}

// parseAdminTokens reads name:token,... (a token may hold ':').
func parseAdminTokens(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, tok, ok := strings.Cut(part, ":")
		if !ok || name == "" || tok == "" {
			return nil, fmt.Errorf("%q: want name:token, for example finance:<32 random characters>", strings.SplitN(part, ":", 2)[0]+":…")
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("the name %q is given twice", name)
		}
		out[name] = tok
	}
	return out, nil
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

// serverURL is where the client commands (admin, run, runs, balance,
// cancel) find the server: APPRUN_URL, else http:// + APPRUN_ADDR (the
// address `apprun serve` listens on), else http://127.0.0.1:8080.
func serverURL() string {
	return env("APPRUN_URL", "http://"+env("APPRUN_ADDR", "127.0.0.1:8080"))
}

// isSet says whether the flag was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// parseServe reads the flags, then the environment variables of the same
// meaning.
func parseServe(args []string) (node.Config, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	vars := newEnvFlags(fs)
	s := declareServe(fs, vars)
	if err := vars.parse(args); err != nil {
		return node.Config{}, err
	}
	return s.config()
}

// serveFlags are serve's flags declared on a flag set: `apprun serve`'s
// help and usage errors are built from the same set (main.go).
type serveFlags struct {
	c                                                       *node.Config
	fs                                                      *flag.FlagSet
	routes, timeouts, retention, packs, record, rerunModels *string
	admins                                                  *string
}

// declareServe declares serve's flags on fs, each bound to its variable.
func declareServe(fs *flag.FlagSet, vars *envFlags) *serveFlags {
	var c node.Config
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:8080", "HTTP listen address (APPRUN_ADDR)")
	vars.bind("addr", "APPRUN_ADDR")
	fs.StringVar(&c.DataDir, "data", "./data", "data directory (APPRUN_DATA)")
	vars.bind("data", "APPRUN_DATA")
	fs.StringVar(&c.NATSURL, "nats-url", "", "external NATS URL; empty runs an embedded server (APPRUN_NATS_URL)")
	vars.bind("nats-url", "APPRUN_NATS_URL")
	fs.StringVar(&c.NATSListen, "nats-listen", "", "client address for the embedded NATS server; empty opens no port (APPRUN_NATS_LISTEN)")
	vars.bind("nats-listen", "APPRUN_NATS_LISTEN")
	fs.StringVar(&c.NATSCreds, "nats-creds", "", "NATS credentials file for an external NATS (APPRUN_NATS_CREDS)")
	vars.bind("nats-creds", "APPRUN_NATS_CREDS")
	fs.StringVar(&c.NATSToken, "nats-token", "", "NATS token for an external NATS (APPRUN_NATS_TOKEN)")
	vars.bind("nats-token", "APPRUN_NATS_TOKEN")
	fs.StringVar(&c.NATSCA, "nats-ca", "", "CA certificate for TLS to an external NATS (APPRUN_NATS_CA)")
	vars.bind("nats-ca", "APPRUN_NATS_CA")
	fs.StringVar(&c.NATSCert, "nats-cert", "", "client certificate for TLS to an external NATS (APPRUN_NATS_CERT)")
	vars.bind("nats-cert", "APPRUN_NATS_CERT")
	fs.StringVar(&c.NATSKey, "nats-key", "", "client key for TLS to an external NATS (APPRUN_NATS_KEY)")
	vars.bind("nats-key", "APPRUN_NATS_KEY")
	fs.StringVar(&c.ServerName, "server-name", "", "embedded NATS server name, unique per cluster member (APPRUN_SERVER_NAME; default: derived from --cluster-listen)")
	vars.bind("server-name", "APPRUN_SERVER_NAME")
	fs.StringVar(&c.ClusterName, "cluster-name", "", "embedded JetStream cluster name (APPRUN_CLUSTER_NAME)")
	vars.bind("cluster-name", "APPRUN_CLUSTER_NAME")
	fs.StringVar(&c.ClusterListen, "cluster-listen", "", "host:port for routes from the other members (APPRUN_CLUSTER_LISTEN)")
	vars.bind("cluster-listen", "APPRUN_CLUSTER_LISTEN")
	routes := fs.String("routes", "", "host:port of every cluster member, comma-separated (APPRUN_ROUTES)")
	vars.bind("routes", "APPRUN_ROUTES")
	fs.StringVar(&c.AdminToken, "admin-token", "", "admin API token (APPRUN_ADMIN_TOKEN)")
	vars.bind("admin-token", "APPRUN_ADMIN_TOKEN")
	admins := fs.String("admin-tokens", "", "named admin tokens, name:token,... each call's events and log line name its token's name (APPRUN_ADMIN_TOKENS)")
	vars.bind("admin-tokens", "APPRUN_ADMIN_TOKENS")
	fs.StringVar(&c.LedgerKeyFile, "ledger-signing-key", "", "the Ed25519 key file that signs the ledger, kept outside --data (APPRUN_LEDGER_SIGNING_KEY; apprun ledger new-key makes one)")
	vars.bind("ledger-signing-key", "APPRUN_LEDGER_SIGNING_KEY")
	fs.BoolVar(&c.Dev, "dev", false, "dev mode: demo account and printed credentials (APPRUN_DEV=1)")
	vars.bind("dev", "APPRUN_DEV")
	fs.IntVar(&c.Limits.CreatePerMinute, "create-per-min", 10, "run creations per minute per key (APPRUN_CREATE_PER_MIN)")
	vars.bind("create-per-min", "APPRUN_CREATE_PER_MIN")
	fs.IntVar(&c.Limits.ReadsPerMinute, "reads-per-min", 120, "reads per minute per key (APPRUN_READS_PER_MIN)")
	vars.bind("reads-per-min", "APPRUN_READS_PER_MIN")
	fs.IntVar(&c.Limits.OwnerActiveRuns, "owner-active-runs", 3, "active runs per account (APPRUN_OWNER_ACTIVE_RUNS)")
	vars.bind("owner-active-runs", "APPRUN_OWNER_ACTIVE_RUNS")
	fs.IntVar(&c.Limits.PlatformActiveRuns, "platform-active-runs", 12, "active runs, all accounts (APPRUN_PLATFORM_ACTIVE_RUNS)")
	vars.bind("platform-active-runs", "APPRUN_PLATFORM_ACTIVE_RUNS")
	fs.DurationVar(&c.Heartbeat, "heartbeat", 15*time.Second, "SSE heartbeat interval (APPRUN_HEARTBEAT)")
	vars.bind("heartbeat", "APPRUN_HEARTBEAT")
	timeouts := fs.String("app-timeouts", "", "per-App timeouts, slug=duration,... (APPRUN_APP_TIMEOUTS)")
	vars.bind("app-timeouts", "APPRUN_APP_TIMEOUTS")
	retention := fs.String("app-retention", "", "per-App retention windows, slug=duration,... (APPRUN_APP_RETENTION)")
	vars.bind("app-retention", "APPRUN_APP_RETENTION")
	fs.DurationVar(&c.RetentionSweep, "retention-sweep", time.Minute, "how often expired runs are removed (APPRUN_RETENTION_SWEEP)")
	vars.bind("retention-sweep", "APPRUN_RETENTION_SWEEP")
	fs.DurationVar(&c.CheckpointEvery, "ledger-checkpoint-every", time.Minute, "how often the ledger's signed checkpoint is written when account events came since the last (APPRUN_LEDGER_CHECKPOINT_EVERY)")
	vars.bind("ledger-checkpoint-every", "APPRUN_LEDGER_CHECKPOINT_EVERY")
	rerunModels := fs.String("rerun-models", "", "models a rerun may ask for besides --llm-model, comma-separated; a run's price does not depend on its model (APPRUN_RERUN_MODELS)")
	vars.bind("rerun-models", "APPRUN_RERUN_MODELS")
	record := fs.String("run-record", "on", "keep each run's record (model exchanges, sources read) in its log: on or off (APPRUN_RUN_RECORD)")
	vars.bind("run-record", "APPRUN_RUN_RECORD")
	fs.IntVar(&c.StreamsPerKey, "streams-per-key", 20, "open event streams per API key on this node (APPRUN_STREAMS_PER_KEY)")
	vars.bind("streams-per-key", "APPRUN_STREAMS_PER_KEY")
	fs.IntVar(&c.StreamsPerAccount, "streams-per-account", 40, "open event streams per account, over all its keys, on this node (APPRUN_STREAMS_PER_ACCOUNT)")
	vars.bind("streams-per-account", "APPRUN_STREAMS_PER_ACCOUNT")
	fs.IntVar(&c.Conns.Max, "max-conns", defaultMaxConns(), "connections this node holds at most, 0 for no cap; default the descriptor limit less 1024, at most 16384 (APPRUN_MAX_CONNS)")
	vars.bind("max-conns", "APPRUN_MAX_CONNS")
	fs.IntVar(&c.Conns.PerAddr, "conns-per-addr", 128, "connections one client address holds before any authenticates, 0 for no cap; behind a proxy, 0 (APPRUN_CONNS_PER_ADDR)")
	vars.bind("conns-per-addr", "APPRUN_CONNS_PER_ADDR")
	fs.IntVar(&c.Refusals.PerKeyPerMinute, "refused-per-min", 60, "refused requests per minute per API key before it gets 429, 0 for no limit (APPRUN_REFUSED_PER_MIN)")
	vars.bind("refused-per-min", "APPRUN_REFUSED_PER_MIN")
	fs.IntVar(&c.Refusals.PerAddrPerMinute, "addr-refused-per-min", 120, "refused requests without a key per minute per client address before it gets 429, 0 for no limit (APPRUN_ADDR_REFUSED_PER_MIN)")
	vars.bind("addr-refused-per-min", "APPRUN_ADDR_REFUSED_PER_MIN")
	fs.IntVar(&c.TestAmbiguousAdmissions, "test-ambiguous-admissions", 0, "test fault: every n-th admission's outcome is unknown to the node, as after a lost ack (needs --test-apps)")
	fs.BoolVar(&c.TestApps, "test-apps", false, "add the test fixture App test-sleep (APPRUN_TEST_APPS=1)")
	vars.bind("test-apps", "APPRUN_TEST_APPS")
	fs.IntVar(&c.Replicas, "replicas", 1, "stream replicas (APPRUN_REPLICAS)")
	vars.bind("replicas", "APPRUN_REPLICAS")
	fs.StringVar(&c.AppsDir, "apps-dir", "", "directory of App definitions that add to or replace the shipped ones (APPRUN_APPS_DIR)")
	vars.bind("apps-dir", "APPRUN_APPS_DIR")
	fs.StringVar(&c.Model.BaseURL, "llm-base-url", "", "OpenAI-compatible API base, e.g. http://localhost:11434/v1; empty: no model (OPENAI_BASE_URL)")
	vars.bind("llm-base-url", "OPENAI_BASE_URL")
	c.Model.APIKey = os.Getenv("OPENAI_API_KEY") // not a flag: it would show in ps
	fs.StringVar(&c.Model.Model, "llm-model", "", "model name (APPRUN_LLM_MODEL)")
	vars.bind("llm-model", "APPRUN_LLM_MODEL")
	fs.StringVar(&c.Model.JSONMode, "llm-json-mode", llm.JSONAuto, "how replies are asked to be JSON: auto (strict json_schema, falling back to json_object, then prompt, as the provider refuses), json_schema, json_object or prompt (APPRUN_LLM_JSON_MODE)")
	vars.bind("llm-json-mode", "APPRUN_LLM_JSON_MODE")
	fs.StringVar(&c.Model.Provider, "llm-provider", llm.ProviderOpenAI, "openai (any OpenAI-compatible server) or azure (Azure OpenAI: OPENAI_BASE_URL is the resource endpoint, the model the deployment) (APPRUN_LLM_PROVIDER)")
	vars.bind("llm-provider", "APPRUN_LLM_PROVIDER")
	fs.StringVar(&c.Model.APIVersion, "llm-api-version", "", "Azure OpenAI's api-version, e.g. 2024-10-21 (APPRUN_LLM_API_VERSION)")
	vars.bind("llm-api-version", "APPRUN_LLM_API_VERSION")
	fs.BoolVar(&c.Model.NoStream, "llm-no-stream", false, "ask for whole replies, not streamed ones (APPRUN_LLM_STREAM=off)")
	fs.IntVar(&c.Model.MaxAttempts, "llm-max-attempts", 5, "tries of one completion on 429, 5xx or a dropped connection (APPRUN_LLM_MAX_ATTEMPTS)")
	vars.bind("llm-max-attempts", "APPRUN_LLM_MAX_ATTEMPTS")
	fs.BoolVar(&c.Model.NoTemperature, "llm-no-temperature", false, "send no temperature: for models that refuse one (APPRUN_LLM_TEMPERATURE=off)")
	fs.StringVar(&c.GitHubAPI, "github-api-url", node.PublicGitHubAPI, "GitHub REST API base for oss-growth (APPRUN_GITHUB_API_URL)")
	vars.bind("github-api-url", "APPRUN_GITHUB_API_URL")
	c.GitHubToken = os.Getenv("GITHUB_TOKEN")
	// Stripe's keys are secrets: environment only (a flag would show in ps).
	c.Billing.SecretKey, c.Billing.WebhookSecret = os.Getenv("APPRUN_STRIPE_SECRET_KEY"), os.Getenv("APPRUN_STRIPE_WEBHOOK_SECRET")
	fs.StringVar(&c.Billing.APIBase, "stripe-api-base", "", "Stripe's API base; empty: https://api.stripe.com (APPRUN_STRIPE_API_BASE; tests point it at stripe-mock)")
	vars.bind("stripe-api-base", "APPRUN_STRIPE_API_BASE")
	packs := fs.String("credit-packs", "", "credit packs on sale, credits:price:currency,... e.g. 100:500:usd,500:2000:usd (APPRUN_CREDIT_PACKS)")
	vars.bind("credit-packs", "APPRUN_CREDIT_PACKS")
	fs.StringVar(&c.PublicURL, "public-url", "", "the site's address as buyers reach it, for Stripe Checkout's return; default http:// + --addr (APPRUN_PUBLIC_URL)")
	vars.bind("public-url", "APPRUN_PUBLIC_URL")
	fs.Int64Var(&c.SourceMaxBytes, "source-max-bytes", 2<<20, "the most bytes an App reads from one source: a page, sitemap, feed, changelog or GitHub answer (APPRUN_SOURCE_MAX_BYTES)")
	vars.bind("source-max-bytes", "APPRUN_SOURCE_MAX_BYTES")
	fs.DurationVar(&c.SourceTimeout, "source-timeout", 15*time.Second, "the longest an App waits for one source (APPRUN_SOURCE_TIMEOUT)")
	vars.bind("source-timeout", "APPRUN_SOURCE_TIMEOUT")
	c.ClusterSecret = os.Getenv("APPRUN_CLUSTER_SECRET") // not a flag: it would show in ps
	fs.Int64Var(&c.SignupCredits, "signup-credits", 100, "Credits a website sign-up starts with (APPRUN_SIGNUP_CREDITS)")
	vars.bind("signup-credits", "APPRUN_SIGNUP_CREDITS")
	fs.DurationVar(&c.SessionTTL, "session-ttl", 7*24*time.Hour, "how long a website sign-in lasts (APPRUN_SESSION_TTL)")
	vars.bind("session-ttl", "APPRUN_SESSION_TTL")
	fs.DurationVar(&c.StreamTokenTTL, "stream-token-ttl", 10*time.Minute, "how long a stream token works (APPRUN_STREAM_TOKEN_TTL)")
	vars.bind("stream-token-ttl", "APPRUN_STREAM_TOKEN_TTL")
	fs.BoolVar(&c.Webhooks.AllowPrivate, "webhooks-allow-private", false, "let webhook URLs reach loopback and private addresses (APPRUN_WEBHOOKS_ALLOW_PRIVATE=1; on in --dev)")
	vars.bind("webhooks-allow-private", "APPRUN_WEBHOOKS_ALLOW_PRIVATE")
	fs.BoolVar(&c.SourcesAllowPrivate, "sources-allow-private", false, "let Apps read sources on loopback and private addresses (APPRUN_SOURCES_ALLOW_PRIVATE=1)")
	vars.bind("sources-allow-private", "APPRUN_SOURCES_ALLOW_PRIVATE")
	fs.BoolVar(&c.SecureCookies, "secure-cookies", false, "mark the session cookie Secure: TLS ends at a proxy in front (APPRUN_SECURE_COOKIES=1)")
	vars.bind("secure-cookies", "APPRUN_SECURE_COOKIES")
	fs.StringVar(&c.SMTPURL, "smtp-url", "", "mail server of the password reset links: smtp://user:password@host:587 (STARTTLS) or smtps://user:password@host:465 (TLS); empty: no reset by email, but for --dev's outbox at /dev/mail (APPRUN_SMTP_URL; a password goes in the variable: a flag shows in ps)")
	vars.bind("smtp-url", "APPRUN_SMTP_URL")
	fs.StringVar(&c.SMTPFrom, "smtp-from", "", "sender address of the mail, e.g. no-reply@example.com (APPRUN_SMTP_FROM)")
	vars.bind("smtp-from", "APPRUN_SMTP_FROM")
	return &serveFlags{&c, fs, routes, timeouts, retention, packs, record, rerunModels, admins}
}

// config reads and checks serve's flags once their set is parsed.
func (s *serveFlags) config() (node.Config, error) {
	c, fs, routes, timeouts, retention, packs, record := *s.c, s.fs, s.routes, s.timeouts, s.retention, s.packs, s.record
	for _, m := range strings.Split(*s.rerunModels, ",") {
		if m = strings.TrimSpace(m); m != "" {
			c.RerunModels = append(c.RerunModels, m)
		}
	}
	switch v := os.Getenv("APPRUN_LLM_TEMPERATURE"); v {
	case "", "on":
	case "off":
		if !isSet(fs, "llm-no-temperature") {
			c.Model.NoTemperature = true
		}
	default:
		return c, fmt.Errorf("config: APPRUN_LLM_TEMPERATURE=%q: want off (send no temperature) or nothing", v)
	}
	switch v := strings.ToLower(os.Getenv("APPRUN_LLM_STREAM")); v {
	case "", "on", "1", "true", "yes":
	case "off", "0", "false", "no":
		if !isSet(fs, "llm-no-stream") {
			c.Model.NoStream = true
		}
	default:
		return c, fmt.Errorf("config: APPRUN_LLM_STREAM=%q: want off (whole replies) or on", os.Getenv("APPRUN_LLM_STREAM"))
	}
	if err := checkModelConfig(c.Model); err != nil {
		return c, err
	}
	var err error
	if c.AppTimeouts, err = parseDurations(*timeouts); err != nil {
		return c, fmt.Errorf("serve: app-timeouts: %w", err)
	}
	if c.AppRetention, err = parseDurations(*retention); err != nil {
		return c, fmt.Errorf("serve: app-retention: %w", err)
	}
	if c.AdminTokens, err = parseAdminTokens(*s.admins); err != nil {
		return c, fmt.Errorf("serve: admin-tokens: %w", err)
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("serve: unexpected argument %q", fs.Arg(0))
	}
	if c.TestAmbiguousAdmissions < 0 || c.TestAmbiguousAdmissions > 0 && !c.TestApps {
		return c, errors.New("serve: --test-ambiguous-admissions is a test fault: a count of 1 or more, with --test-apps")
	}
	for _, r := range strings.Split(*routes, ",") {
		if r = strings.TrimSpace(r); r != "" {
			c.Routes = append(c.Routes, r)
		}
	}
	if c.ClusterName != "" {
		if c.NATSURL != "" {
			return c, errors.New("serve: --cluster-name forms an embedded cluster; it cannot be used with --nats-url")
		}
		if c.ClusterListen == "" || len(c.Routes) == 0 {
			return c, errors.New("serve: an embedded cluster needs --cluster-listen and --routes")
		}
		if c.ServerName == "" {
			c.ServerName = "apprun-" + strings.NewReplacer(":", "-", ".", "-").Replace(c.ClusterListen)
		}
	}
	for _, l := range []struct {
		name string
		v    int
	}{{"create-per-min", c.Limits.CreatePerMinute}, {"reads-per-min", c.Limits.ReadsPerMinute},
		{"owner-active-runs", c.Limits.OwnerActiveRuns}, {"platform-active-runs", c.Limits.PlatformActiveRuns},
		{"max-conns", c.Conns.Max}, {"conns-per-addr", c.Conns.PerAddr},
		{"refused-per-min", c.Refusals.PerKeyPerMinute}, {"addr-refused-per-min", c.Refusals.PerAddrPerMinute}} {
		if l.v < 0 {
			return c, fmt.Errorf("serve: %s must be 0 (no limit) or more", l.name)
		}
	}
	if c.Conns.Max > 0 && c.Conns.PerAddr > c.Conns.Max {
		return c, fmt.Errorf("serve: conns-per-addr (%d) must not be more than max-conns (%d)", c.Conns.PerAddr, c.Conns.Max)
	}
	if c.Model.BaseURL != "" && c.Model.Model == "" {
		return c, errors.New("serve: OPENAI_BASE_URL is set but APPRUN_LLM_MODEL is not: name the model to use")
	}
	if c.Dev {
		c.Webhooks.AllowPrivate = true // a dev machine's receivers are local
	}
	if c.SignupCredits < 0 {
		return c, errors.New("serve: signup-credits must be 0 or more")
	}
	if c.SessionTTL < time.Second {
		return c, errors.New("serve: session-ttl must be at least 1s")
	}
	if c.Billing.Packs, err = billing.ParsePacks(*packs); err != nil {
		return c, fmt.Errorf("serve: %w", err)
	}
	if c.CheckpointEvery < time.Second {
		return c, errors.New("serve: ledger-checkpoint-every must be at least 1s")
	}
	if len(c.RerunModels) > 0 && c.Model.BaseURL == "" {
		return c, errors.New("serve: rerun-models needs a model provider (--llm-base-url)")
	}
	switch *record {
	case "on":
	case "off":
		c.NoRecord = true
	default:
		return c, fmt.Errorf("serve: run-record %q: want on or off", *record)
	}
	if c.RetentionSweep <= 0 {
		return c, errors.New("serve: retention-sweep must be more than 0")
	}
	if c.Heartbeat < 100*time.Millisecond {
		return c, errors.New("serve: heartbeat must be at least 100ms")
	}
	if c.SourceMaxBytes < 1024 || c.SourceTimeout < 100*time.Millisecond {
		return c, errors.New("serve: source-max-bytes must be at least 1024 and source-timeout at least 100ms")
	}
	if u, err := url.Parse(c.SMTPURL); err == nil && isSet(fs, "smtp-url") {
		if _, pass := u.User.Password(); pass {
			return c, errors.New("serve: --smtp-url holds a password, which ps shows to every user of the machine: give the URL in APPRUN_SMTP_URL instead")
		}
	}
	return c, nil
}

// defaultMaxConns is the node's connection cap when none is given: the
// process's descriptor limit (Go raises it to the hard limit at start)
// less 1024 for NATS, the data files and outbound requests, between 256
// and 16,384. Past the descriptor limit, accept itself fails and the
// server only retries; under the cap, a connection too many is answered
// and closed. The upper bound is memory's: a hard limit of a million
// (common under Docker and systemd) would cap nothing, and 16,384 idle
// connections hold about 0.5 GiB. More event streams than that on a node
// need --max-conns (docs/deployment.md).
func defaultMaxConns() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 16384
	}
	return int(min(max(int64(lim.Cur)-1024, 256), 16384))
}

// checkModelConfig refuses model settings the provider client cannot
// use (llm.Config.Check), naming the flag and variable a user set, and
// attempts below 1, which the client would read as its default.
func checkModelConfig(m llm.Config) error {
	if m.MaxAttempts < 1 {
		return fmt.Errorf("config: llm-max-attempts (APPRUN_LLM_MAX_ATTEMPTS) %d: want 1 or more", m.MaxAttempts)
	}
	var se *llm.SettingError
	if err := m.Check(); errors.As(err, &se) {
		setting := map[string]string{"JSONMode": "llm-json-mode (APPRUN_LLM_JSON_MODE)", "Provider": "llm-provider (APPRUN_LLM_PROVIDER)",
			"BaseURL": "with APPRUN_LLM_PROVIDER=azure, llm-base-url (OPENAI_BASE_URL)", "APIVersion": "with APPRUN_LLM_PROVIDER=azure, llm-api-version (APPRUN_LLM_API_VERSION)",
			"MaxAttempts": "llm-max-attempts (APPRUN_LLM_MAX_ATTEMPTS)"}[se.Field]
		if se.Value == "" {
			return fmt.Errorf("config: %s is not set: want %s", setting, se.Want)
		}
		return fmt.Errorf("config: %s %q: want %s", setting, se.Value, se.Want)
	} else if err != nil {
		return fmt.Errorf("config: model provider: %w", err)
	}
	return nil
}
