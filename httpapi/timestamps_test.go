package httpapi_test

import (
	"regexp"
	"testing"

	. "github.com/apprun/apprun/node/nodetest"
)

// stamp matches an RFC 3339 time in a JSON string; frac is its fraction.
var stamp = regexp.MustCompile(`"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)"`)

// Every time the API shows is RFC 3339 in UTC with at most millisecond
// precision, the one precision the docs show: runs, their events, the
// statement, brand contexts and stream tokens.
func TestTimestampsAreMillisecondsEverywhere(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	runNo := h.Create(a, ColdEmailRun())
	h.Collect(a, runNo)
	bodies := map[string][]byte{
		"run":          h.Do("GET", "/api/v1/runs/"+runNo, a.Key, nil).Body,
		"runs":         h.Do("GET", "/api/v1/runs", a.Key, nil).Body,
		"events":       h.Do("GET", "/api/v1/runs/"+runNo+"/events", a.Key, nil).Body,
		"ledger":       h.Do("GET", "/api/v1/account/ledger", a.Key, nil).Body,
		"brand":        h.Do("POST", "/api/v1/brand-contexts", a.Key, map[string]any{"name": "Acme"}).Body,
		"stream-token": h.Do("POST", "/api/v1/runs/"+runNo+"/stream-token", a.Key, nil).Body,
	}
	for what, body := range bodies {
		found := stamp.FindAllSubmatch(body, -1)
		if len(found) == 0 {
			t.Fatalf("%s: no timestamp in %s", what, body)
		}
		for _, m := range found {
			if len(m[2]) > 4 || string(m[3]) != "Z" {
				t.Fatalf("%s: timestamp %s is not UTC with at most milliseconds", what, m[0])
			}
		}
	}
}
