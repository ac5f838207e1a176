package mcp

import (
	"bytes"
	"io"
	"net/http"
)

// oneMessage refuses a JSON-RPC batch (a body that is an array), which
// the SDK serves for clients of MCP 2025-03-26: every message of a batch
// was served under the one count the edge made of the HTTP request
// against the key's read limit, so one request of 1 MiB carried 9,500
// tool calls. MCP removed batching in 2025-06-18. The refusal is plain
// text with 400, which httpapi.Enveloped turns into the error envelope as
// it does the SDK's own refusals.
func oneMessage(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body) // in memory already: the edge read it whole
		if err != nil {
			http.Error(w, "could not read the request body", http.StatusBadRequest)
			return
		}
		if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] == '[' {
			http.Error(w, "JSON-RPC batches are not accepted (MCP has none since 2025-06-18): send one message per request", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}
