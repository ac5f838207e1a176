package httpapi

import (
	"net/http"
	"strings"

	"github.com/gorilla/mux"
)

// AllowedMethods lists the methods router has a route for at r's path,
// for the Allow header a 405 must carry (RFC 9110 §15.5.6), with HEAD
// wherever GET is (the edge answers it). Both the API and the website
// answer their 405s with it.
func AllowedMethods(router *mux.Router, r *http.Request) string {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := r.WithContext(r.Context())
		probe.Method = m
		var match mux.RouteMatch
		if router.Match(probe, &match) && match.MatchErr == nil {
			allowed = append(allowed, m)
			if m == http.MethodGet {
				allowed = append(allowed, http.MethodHead)
			}
		}
	}
	return strings.Join(allowed, ", ")
}
