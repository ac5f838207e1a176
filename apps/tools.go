package apps

import (
	"context"
	"sort"
	"strings"

	"github.com/apprun/apprun/engine"
)

// tool is a step that is Go code: it reads the job (and, for tools that
// need one, the input field the definition names) and returns data for
// the next steps, or the run's output when it is the last step. It
// reports progress as steps of its own; the executor renumbers them as
// the definition's step unless the tool is the App's only step.
type tool struct {
	needsInput bool
	run        func(ctx context.Context, env *Env, job engine.Job, field string, progress func(engine.Step)) (any, error)
}

// tools are the tools a definition can name.
var tools = map[string]tool{
	"github_repo":         {needsInput: true, run: fetchRepository},
	"web_page":            {needsInput: true, run: readPage},
	"sitemap":             {needsInput: true, run: readSitemap},
	"feed":                {needsInput: true, run: readFeed},
	"changelog":           {needsInput: true, run: readChangelog},
	"cold_email_template": {run: coldEmailTemplate},
}

func toolNames() string {
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// coldEmailTemplate is the built-in writer as a tool: the cold email
// writer's output when no model is configured.
func coldEmailTemplate(ctx context.Context, _ *Env, job engine.Job, _ string, progress func(engine.Step)) (any, error) {
	b := briefFrom(job)
	seq, err := BuiltinWriter{}.Write(ctx, b, progress)
	if err != nil {
		return nil, err
	}
	return seq, nil
}
