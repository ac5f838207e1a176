package httpapi

import (
	"net/http"
	"net/url"

	"github.com/apprun/apprun/engine"
)

// A parameter the API reads is read once: sent twice, with the same value
// or not, it is refused with 400, never read from its first copy. A proxy,
// cache or log in front that read the other copy would see another
// request (two Authorization headers are refused so too, auth.go).

// queryOnce is the query parameter name, "" when absent.
func queryOnce(r *http.Request, name string) (string, error) {
	return valueOnce(r.URL.Query(), name)
}

// valueOnce is queryOnce on a query already parsed (a route that reads
// several parameters parses it once).
func valueOnce(q url.Values, name string) (string, error) {
	return once(q[name], "send the query parameter %s once, not %d times", name)
}

// headerOnce is the request header name, "" when absent.
func headerOnce(r *http.Request, name string) (string, error) {
	return once(r.Header.Values(name), "send one %s header, not %d", name)
}

func once(vals []string, format, name string) (string, error) {
	switch len(vals) {
	case 0:
		return "", nil
	case 1:
		return vals[0], nil
	}
	return "", errorf(engine.CodeInvalidRequest, format, name, len(vals))
}
