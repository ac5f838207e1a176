// Package apps owns the App catalog: the definition files (embedded from
// catalog/, and from APPRUN_APPS_DIR), their checks at load, and the
// executor each definition becomes: tool steps (GitHub, the built-in cold
// email writer), then a model step whose prompt keeps user data delimited
// from the instructions, and whose reply is checked against the App's
// output schema. The engine knows Apps only through engine.App.
package apps
