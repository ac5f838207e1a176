package apps

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/apprun/apprun/engine"
)

// repoAddresses are addresses the github_repo tool must read (true) or
// refuse (false). A name made only of dots is a path segment (".", "..")
// or no name ("..."): the request would be for /repos/octo/.., which an
// HTTP client or proxy resolves to another resource.
var repoAddresses = map[string]bool{
	"https://github.com/nats-io/nats-server":      true,
	"https://github.com/nats-io/nats-server.git/": true,
	"https://www.github.com/octo/a.b":             true,
	"https://github.com/octo/.github":             true,
	"https://github.com/octo/..git":               true, // the name "..git", not ".." and .git
	"https://github.com/octo/.":                   false,
	"https://github.com/octo/..":                  false,
	"https://github.com/octo/../":                 false,
	"https://github.com/octo/...":                 false,
	"https://github.com/octo/.....git":            true, // "....." + "git": a name with letters
	"https://github.com/octo/.git":                true,
	"https://github.com/octo/":                    false,
	"https://github.com/octo/../readme":           false,
}

// The tool refuses a name of dots before asking GitHub anything, and no
// address it reads asks GitHub for a dot segment.
func TestRepositoryNamesOfOnlyDotsAreRefused(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var asked []string
	gh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path)
		mu.Unlock()
		http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
	}))
	defer gh.Close()
	env := (&Env{GitHubAPI: gh.URL}).withDefaults()
	for addr, ok := range repoAddresses {
		mu.Lock()
		asked = nil
		mu.Unlock()
		_, err := fetchRepository(context.Background(), env, engine.Job{Input: map[string]any{"repo_url": addr}}, "repo_url", func(engine.Step) {})
		var re *engine.RunError
		if !errors.As(err, &re) || re.Code != engine.FailSourceUnavailable {
			t.Fatalf("%s: %v, want %s", addr, err, engine.FailSourceUnavailable)
		}
		mu.Lock()
		switch {
		case !ok && len(asked) != 0:
			t.Errorf("%s: asked GitHub for %v, want it refused first", addr, asked)
		case ok && (len(asked) == 0 || !strings.Contains(re.Message, "no public repository")):
			t.Errorf("%s: %v (asked %v), want it read (GitHub says 404)", addr, re, asked)
		}
		for _, p := range asked {
			for _, seg := range strings.Split(p, "/") {
				if seg == "." || seg == ".." {
					t.Errorf("%s: asked GitHub for %s", addr, p)
				}
			}
		}
		mu.Unlock()
	}
}

// Each shipped App that reads a repository admits at create what the
// tool reads, and refuses there what it refuses (before any charge).
func TestRepositorySchemasAgreeWithTheTool(t *testing.T) {
	t.Parallel()
	n := 0
	for _, d := range shippedDefinitions(t) {
		for _, st := range d.Steps {
			if st.Tool != "github_repo" {
				continue
			}
			var schema struct {
				Properties map[string]struct {
					Pattern string `json:"pattern"`
				} `json:"properties"`
			}
			if err := json.Unmarshal(d.InputSchema, &schema); err != nil {
				t.Fatal(err)
			}
			re := regexp.MustCompile(schema.Properties[st.Input].Pattern)
			for addr, ok := range repoAddresses {
				if re.MatchString(addr) != ok || repoURL.MatchString(addr) != ok {
					t.Errorf("%s.%s: %s admitted by the schema %v, by the tool %v, want %v",
						d.Slug, st.Input, addr, re.MatchString(addr), repoURL.MatchString(addr), ok)
				}
			}
			n++
		}
	}
	if n < 2 {
		t.Fatalf("%d Apps read a repository, want oss-growth and readme-improver", n)
	}
}

// GitHub out of reach is said in words, with no address of the node's
// network (its resolver, its proxy) in the message; the client's own
// error is in details.
func TestGitHubOutOfReachIsSaidInWords(t *testing.T) {
	t.Parallel()
	gh := httptest.NewServer(http.NotFoundHandler())
	base := gh.URL
	gh.Close() // nothing listens there now
	env := (&Env{GitHubAPI: base}).withDefaults()
	_, err := fetchRepository(context.Background(), env, engine.Job{Input: map[string]any{"repo_url": "https://github.com/acme/ledger"}}, "repo_url", func(engine.Step) {})
	var re *engine.RunError
	if !errors.As(err, &re) || re.Message != "GitHub could not be reached for acme/ledger: connection refused" || !strings.Contains(re.Details, "127.0.0.1") {
		t.Fatalf("%#v", err)
	}
}
