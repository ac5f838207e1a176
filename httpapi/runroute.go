package httpapi

import (
	"net/http"
	"strings"

	"github.com/apprun/apprun/engine"
	"github.com/gorilla/mux"
)

// A run's GET, the API's busiest request, is served ahead of the router.
// BenchmarkGetRunHandler's profile put gorilla/mux at 48 % of the handler's
// CPU for it: its regexps match the path, then match it again to take the
// run number out, and the request is copied twice (for the route and for
// its variables). ServeHTTP sends a request whose path is exactly
// /api/v1/runs/ and a valid run number (so nothing for the router to
// clean or redirect) straight to the route's handler, through the same
// middleware the router applies; every other request, an invalid run
// number included, goes to the router as before, where the same route is
// registered first.

// runRoute is the route's template: what the router's route is
// registered as, and what metrics and logs name it.
const runRoute = "/api/v1/runs/{run_no}"

const runPathPrefix = "/api/v1/runs/"

// runPathRest is what follows /api/v1/runs/ in a GET's path when it is
// one non-empty segment: exactly what the router's route matches
// ({run_no} is one segment), so it names the route and gives its run
// number without the id check, which runOfPath and ownRun make.
func runPathRest(r *http.Request) (string, bool) {
	if r.Method != http.MethodGet {
		return "", false
	}
	rest, ok := strings.CutPrefix(r.URL.Path, runPathPrefix)
	return rest, ok && rest != "" && !strings.Contains(rest, "/")
}

// runOfPath returns the run number of a GET the fast path serves.
func runOfPath(r *http.Request) (string, bool) {
	runNo, ok := runPathRest(r)
	return runNo, ok && engine.ValidID(engine.PrefixRun, runNo)
}

// runNoOf is the run number a run's route was called with: the path's
// for its GET on either way (the router's variable is the same, found
// with a context lookup), the router's variable on its other routes.
func runNoOf(r *http.Request) string {
	if runNo, ok := runPathRest(r); ok {
		return runNo
	}
	return mux.Vars(r)["run_no"]
}

// middleware is what every API route runs through, on the router and on
// the fast path alike.
func (a *API) middleware() []mux.MiddlewareFunc {
	return []mux.MiddlewareFunc{a.metrics.observe, a.recoverPanics}
}

// chain wraps h in the API's middleware, outermost first, as the router
// does.
func (a *API) chain(h http.Handler) http.Handler {
	mw := a.middleware()
	for i := len(mw) - 1; i >= 0; i-- {
		h = mw[i].Middleware(h)
	}
	return h
}
