package apps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/outbound"
)

// repoURL is a GitHub repository's web address; the input schemas of
// the Apps that read one (oss-growth, readme-improver) admit only these.
// A name has a character other than a dot: ".", ".." (path segments: the
// request would be for /repos/OWNER/.., another resource) and "..." are
// no repository's name.
var repoURL = regexp.MustCompile(`^https?://(?:www\.)?github\.com/([A-Za-z0-9][A-Za-z0-9-]*)/(\.*[A-Za-z0-9_-][A-Za-z0-9._-]*?)(?:\.git)?/?$`)

// readmeLimit is how much of a README the model is given.
const readmeLimit = 12000

// Repository is what the github_repo tool learns about a repository.
type Repository struct {
	FullName      string           `json:"full_name"`
	URL           string           `json:"url"`
	Description   string           `json:"description"`
	Homepage      string           `json:"homepage,omitempty"`
	Topics        []string         `json:"topics"`
	Stars         int              `json:"stars"`
	Forks         int              `json:"forks"`
	OpenIssues    int              `json:"open_issues"`
	License       string           `json:"license,omitempty"`
	DefaultBranch string           `json:"default_branch,omitempty"`
	CreatedAt     string           `json:"created_at,omitempty"`
	PushedAt      string           `json:"pushed_at,omitempty"`
	Languages     map[string]int64 `json:"languages,omitempty"`
	Readme        string           `json:"readme,omitempty"`
	ReadmeCut     bool             `json:"readme_truncated,omitempty"`
}

// fetchRepository is the github_repo tool: the repository's metadata,
// languages and README from the GitHub REST API (env.GitHubAPI). A
// repository that cannot be fetched fails the run with
// source_unavailable; languages and README are best effort.
func fetchRepository(ctx context.Context, env *Env, job engine.Job, field string, progress func(engine.Step)) (any, error) {
	raw, _ := job.Input[field].(string)
	m := repoURL.FindStringSubmatch(strings.TrimSpace(raw))
	if m == nil {
		return nil, unavailable("%q is not a GitHub repository address (https://github.com/OWNER/NAME)", raw)
	}
	owner, name := m[1], m[2]
	base := strings.TrimRight(env.GitHubAPI, "/") + "/repos/" + owner + "/" + name
	progress(engine.Step{Index: 1, Total: 2, Tool: "github", Message: fmt.Sprintf("Reading %s/%s on GitHub", owner, name)})
	var meta struct {
		FullName      string   `json:"full_name"`
		HTMLURL       string   `json:"html_url"`
		Description   string   `json:"description"`
		Homepage      string   `json:"homepage"`
		Topics        []string `json:"topics"`
		Stars         int      `json:"stargazers_count"`
		Forks         int      `json:"forks_count"`
		OpenIssues    int      `json:"open_issues_count"`
		DefaultBranch string   `json:"default_branch"`
		CreatedAt     string   `json:"created_at"`
		PushedAt      string   `json:"pushed_at"`
		Private       bool     `json:"private"`
		License       *struct {
			SPDX string `json:"spdx_id"`
			Name string `json:"name"`
		} `json:"license"`
	}
	status, body, err := githubGet(ctx, env, base, "application/vnd.github+json")
	switch {
	case errors.Is(err, errTooSlow):
		return nil, unavailable("GitHub took longer than %s to answer for %s/%s", env.SourceTimeout, owner, name)
	case errors.Is(err, errTooBig):
		return nil, unavailable("GitHub's answer for %s/%s is larger than %d KiB", owner, name, env.SourceMaxBytes>>10)
	case err != nil:
		ue := unavailable("GitHub could not be reached for %s/%s: %s", owner, name, outbound.Describe(err))
		ue.Details = err.Error()
		return nil, ue
	case status == http.StatusNotFound:
		return nil, unavailable("GitHub has no public repository %s/%s", owner, name)
	case status == http.StatusForbidden || status == http.StatusTooManyRequests:
		ue := unavailable("GitHub refused to answer for %s/%s for now (%d: its rate limit)", owner, name, status)
		ue.Details = "without GITHUB_TOKEN, GitHub allows 60 requests an hour from one address"
		return nil, ue
	case status != http.StatusOK:
		return nil, unavailable("GitHub answered %d for %s/%s", status, owner, name)
	}
	if err := json.Unmarshal(body, &meta); err != nil || meta.FullName == "" {
		return nil, unavailable("GitHub's answer for %s/%s was not a repository", owner, name)
	}
	repo := Repository{FullName: meta.FullName, URL: meta.HTMLURL, Description: meta.Description, Homepage: meta.Homepage,
		Topics: meta.Topics, Stars: meta.Stars, Forks: meta.Forks, OpenIssues: meta.OpenIssues,
		DefaultBranch: meta.DefaultBranch, CreatedAt: meta.CreatedAt, PushedAt: meta.PushedAt}
	if repo.Topics == nil {
		repo.Topics = []string{}
	}
	if meta.License != nil {
		repo.License = meta.License.SPDX
	}
	if status, body, err := githubGet(ctx, env, base+"/languages", "application/vnd.github+json"); err == nil && status == http.StatusOK {
		_ = json.Unmarshal(body, &repo.Languages)
	}
	progress(engine.Step{Index: 2, Total: 2, Tool: "github", Message: "Reading the README"})
	if status, body, err := githubGet(ctx, env, base+"/readme", "application/vnd.github.raw+json"); err == nil && status == http.StatusOK {
		text := []rune(string(body))
		if len(text) > readmeLimit {
			text, repo.ReadmeCut = text[:readmeLimit], true
		}
		repo.Readme = string(text)
	}
	return repo, nil
}

var (
	errTooSlow = errors.New("took longer than the source timeout")
	errTooBig  = errors.New("larger than the source size bound")
)

// githubGet makes one GET, trying a 5xx or a failed connection once more.
// Each try is bounded like any source: env.SourceTimeout and
// env.SourceMaxBytes (errTooSlow, errTooBig).
func githubGet(ctx context.Context, env *Env, url, accept string) (int, []byte, error) {
	var lastErr error
	for attempt := range 2 {
		status, body, err := githubTry(ctx, env, url, accept, attempt)
		switch {
		case err == nil && status >= 500 && attempt == 0:
			lastErr = fmt.Errorf("status %d", status)
		case err == nil:
			return status, body, nil
		case errors.Is(err, errTooSlow) || errors.Is(err, errTooBig) || ctx.Err() != nil:
			return 0, nil, err
		default:
			lastErr = err
		}
	}
	if lastErr == nil {
		lastErr = errors.New("no answer")
	}
	return 0, nil, lastErr
}

// githubTry makes one GET and records it; in a replay it serves the
// recorded one.
func githubTry(ctx context.Context, env *Env, url, accept string, attempt int) (int, []byte, error) {
	sess := sessionOf(ctx)
	if sess.replaying() {
		return replayGitHub(sess, url)
	}
	started := time.Now().UTC()
	status, body, err := githubLive(ctx, env, url, accept, attempt)
	sess.record(sourceEntry(url, started, status, "", body, nil, err))
	return status, body, err
}

func replayGitHub(sess *session, url string) (int, []byte, error) {
	rec, err := sess.next(engine.RecordSource)
	if err != nil {
		return 0, nil, err
	}
	e := *rec
	e.URL = redacted(url)
	sess.record(e)
	switch {
	case e.URL != rec.URL:
		return 0, nil, fmt.Errorf("%w: the replay reads %s where the run read %s", engine.ErrNotRecorded, url, rec.URL)
	case rec.Error == nil:
		body, err := recordedBody(rec)
		return rec.Status, body, err
	}
	for _, known := range []error{errTooSlow, errTooBig} {
		if rec.Error.Message == known.Error() {
			return 0, nil, known
		}
	}
	switch rec.Error.Code {
	case engine.FailTimeout, engine.FailCanceled:
		return 0, nil, replayError(rec.Error)
	}
	// A try's error was the transport's, as text in the run's failure: the
	// same text again, not a run error with its code in front.
	return 0, nil, errors.New(rec.Error.Message)
}

func githubLive(ctx context.Context, env *Env, url, accept string, attempt int) (int, []byte, error) {
	if attempt > 0 {
		select {
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		}
	}
	tctx, cancel := context.WithTimeout(ctx, env.SourceTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(tctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", "apprun")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	if env.GitHubToken != "" {
		req.Header.Set("Authorization", "Bearer "+env.GitHubToken)
	}
	resp, err := env.GitHubClient.Do(req)
	if err == nil {
		defer resp.Body.Close()
		var body []byte
		if resp.ContentLength > env.SourceMaxBytes {
			return 0, nil, errTooBig
		}
		body, err = io.ReadAll(io.LimitReader(resp.Body, env.SourceMaxBytes+1))
		if err == nil {
			if int64(len(body)) > env.SourceMaxBytes {
				return 0, nil, errTooBig
			}
			return resp.StatusCode, body, nil
		}
	}
	if tctx.Err() != nil && ctx.Err() == nil {
		return 0, nil, errTooSlow
	}
	return 0, nil, err
}

func unavailable(format string, args ...any) *engine.RunError {
	return &engine.RunError{Code: engine.FailSourceUnavailable, Message: fmt.Sprintf(format, args...)}
}
