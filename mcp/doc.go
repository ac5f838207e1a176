// Package mcp owns apprun's Model Context Protocol surface at /mcp
// (Streamable HTTP, on the official Go SDK): every runnable App as a tool,
// plus list_apps, get_run and get_balance, for the same API keys, Credits
// and limits as the Run API. A tool call creates a run exactly as POST
// /api/v1/runs does, reports its events as progress notifications, and
// returns the finished output.
package mcp
