package main

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apprun/apprun/httpapi/contract"
)

// Every in-process server of this package's tests (the harness) is
// wrapped in a contract checker: each request to a documented operation
// and its response, success or error, is validated against the OpenAPI
// document the node serves (httpapi/contract). A fault fails the test
// that made the request; one found after its test ended fails the run.
var contracts = struct {
	sync.Mutex
	byDoc map[[32]byte]*contract.Checker
}{byDoc: map[[32]byte]*contract.Checker{}}

// checked wraps a node's handler in the checker for the document it serves.
func (h *Harness) checked(handler http.Handler) http.Handler {
	h.T.Helper()
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/openapi.json", nil))
	if rec.Code != 200 {
		h.T.Fatalf("openapi.json: %d", rec.Code)
	}
	sum := sha256.Sum256(rec.Body.Bytes())
	contracts.Lock()
	c := contracts.byDoc[sum]
	if c == nil {
		var err error
		if c, err = contract.New(rec.Body.Bytes()); err != nil {
			contracts.Unlock()
			h.T.Fatalf("the OpenAPI document does not load: %v", err)
		}
		contracts.byDoc[sum] = c
	}
	contracts.Unlock()
	return c.Wrap(handler, func(f string) {
		h.faultMu.Lock()
		h.faults = append(h.faults, f)
		h.faultMu.Unlock()
	})
}

// reportFaults fails the harness's test with every contract fault found.
func (h *Harness) reportFaults() {
	h.faultMu.Lock()
	defer h.faultMu.Unlock()
	for _, f := range h.faults {
		h.T.Errorf("contract: %s", f)
	}
	h.faults = nil
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	contracts.Lock()
	defer contracts.Unlock()
	seen := map[string]int{}
	var ops []string
	late := 0
	for _, c := range contracts.byDoc {
		for k, n := range c.Seen() {
			seen[k] += n
		}
		ops = c.Operations()
		for _, p := range c.Problems() {
			late++
			fmt.Fprintf(os.Stderr, "contract: %s\n", p)
		}
	}
	if late > 0 && code == 0 {
		fmt.Fprintf(os.Stderr, "contract: %d faults (some after their test ended)\n", late)
		code = 1
	}
	// The whole package ran: every documented success answer was seen.
	if f := flag.Lookup("test.run"); code == 0 && f != nil && f.Value.String() == "" && !testing.Short() {
		var missing []string
		for _, op := range ops {
			if seen[op] == 0 {
				missing = append(missing, op)
			}
		}
		if len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "contract: no test saw %s\n", strings.Join(missing, ", "))
			code = 1
		}
	}
	if path := os.Getenv("APPRUN_CONTRACT_REPORT"); path != "" && len(seen) > 0 {
		pairs := slices.Sorted(maps.Keys(seen))
		var b strings.Builder
		fmt.Fprintf(&b, "contract test: %d distinct (operation, status) pairs validated, %d responses\n", len(pairs), sum(seen))
		for _, p := range pairs {
			fmt.Fprintf(&b, "  %-28s %d\n", p, seen[p])
		}
		_ = os.WriteFile(path, []byte(b.String()), 0o644)
	}
	os.Exit(code)
}

func sum(m map[string]int) (n int) {
	for _, v := range m {
		n += v
	}
	return n
}
