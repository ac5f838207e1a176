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

// routeOf names the matched route template for logs (never the raw path,
// which may carry ids).
func routeOf(r *http.Request) string {
	if _, ok := runOfPath(r); ok {
		return runRoute // the fast path's (runroute.go), and the route the router matches first
	}
	if rt := mux.CurrentRoute(r); rt != nil {
		if tpl, err := rt.GetPathTemplate(); err == nil {
			return tpl
		}
	}
	return "unmatched"
}
