package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/gorilla/mux"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// routeOf names the matched route template for logs and metrics (never
// the raw path, which may carry ids): the API's or the website's, /mcp,
// or "unmatched".
func routeOf(r *http.Request) string {
	if r.URL.Path == "/mcp" {
		return "/mcp" // the MCP surface has one path and no router
	}
	if _, ok := runPathRest(r); ok {
		return runRoute // on the fast path (runroute.go) or the router, the same route
	}
	if rt := mux.CurrentRoute(r); rt != nil {
		if tpl, err := rt.GetPathTemplate(); err == nil {
			return tpl
		}
	}
	return "unmatched"
}
