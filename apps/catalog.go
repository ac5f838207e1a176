package apps

import (
	"time"

	"github.com/apprun/apprun/engine"
)

// Default is the shipped catalog: the cold-email-writer with the built-in
// writer, and oss-growth, listed but not runnable yet.
func Default() []engine.App {
	return []engine.App{ColdEmailWriter(BuiltinWriter{}), OSSGrowth()}
}

// OSSGrowth is listed with its repo_url input but is not runnable yet: it
// answers app_not_found and is absent from the capability list.
func OSSGrowth() engine.App {
	return engine.App{
		Slug:        "oss-growth",
		Name:        "OSS Growth",
		Description: "A growth plan for an open-source repository.",
		Timeout:     15 * time.Minute,
		Runnable:    false,
		InputSchema: []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
"required":["repo_url"],"additionalProperties":false,
"properties":{"repo_url":{"type":"string","format":"uri","pattern":"^https?://","maxLength":500}}}`),
	}
}
