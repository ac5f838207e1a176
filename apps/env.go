package apps

import (
	"context"
	"net/http"
	"runtime"
	"time"

	"github.com/apprun/apprun/llm"
)

// Model is what a model step calls: one completion (package llm).
type Model interface {
	Complete(ctx context.Context, req llm.Request, watch llm.Watch) (llm.Reply, error)
	// Sent is what a request sends, for the run's record.
	Sent(req llm.Request) llm.Sent
}

// Env is what the Apps run with: the model provider (nil when none is
// configured) and where tools fetch from.
type Env struct {
	Model Model
	// GitHubAPI is the GitHub REST API base (default https://api.github.com).
	GitHubAPI   string
	GitHubToken string
	// HTTPClient reads the sources users name; GitHubClient the GitHub
	// API (the HTTPClient when nil).
	HTTPClient   *http.Client
	GitHubClient *http.Client
	// ProgressEvery is the least time between two progress events while a
	// model writes (default 500ms).
	ProgressEvery time.Duration
	// WaitEvery is the least time between two events that say the run
	// waits on the provider (a retry, a 429's Retry-After; default 2s):
	// the first wait is always said.
	WaitEvery time.Duration
	// SourceMaxBytes and SourceTimeout bound one fetch of a source by a
	// tool (defaults 2 MiB and 15 s).
	SourceMaxBytes int64
	SourceTimeout  time.Duration
	// Parses bounds how many fetched sources are parsed at once on this
	// node, over every run (default half the CPUs, at least one): what a
	// burst of runs reading pages built to be slow can take of the CPU
	// (parse.go).
	Parses int

	parseSlots chan struct{}
}

func (e *Env) withDefaults() *Env {
	out := *e
	if out.GitHubAPI == "" {
		out.GitHubAPI = "https://api.github.com"
	}
	if out.HTTPClient == nil {
		out.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if out.GitHubClient == nil {
		out.GitHubClient = out.HTTPClient
	}
	if out.SourceMaxBytes <= 0 {
		out.SourceMaxBytes = sourceMaxBytes
	}
	if out.SourceTimeout <= 0 {
		out.SourceTimeout = sourceTimeout
	}
	if out.Parses <= 0 {
		out.Parses = max(1, runtime.GOMAXPROCS(0)/2)
	}
	out.parseSlots = make(chan struct{}, out.Parses)
	if out.ProgressEvery <= 0 {
		out.ProgressEvery = 500 * time.Millisecond
	}
	if out.WaitEvery <= 0 {
		out.WaitEvery = 2 * time.Second
	}
	return &out
}
