package mcp

import (
	"bufio"
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
		// The first byte past any white space says whether the body is an
		// array; the rest goes to the SDK unread (the edge holds it all
		// in memory already: no second copy).
		br := bufio.NewReader(r.Body)
		for {
			b, err := br.ReadByte()
			if err != nil {
				break // empty or unreadable: the SDK says so
			}
			if b == ' ' || b == '\t' || b == '\r' || b == '\n' {
				continue
			}
			_ = br.UnreadByte()
			if b == '[' {
				http.Error(w, "JSON-RPC batches are not accepted (MCP has none since 2025-06-18): send one message per request", http.StatusBadRequest)
				return
			}
			break
		}
		r.Body = struct {
			io.Reader
			io.Closer
		}{br, r.Body}
		next.ServeHTTP(w, r)
	})
}
