package nodetest

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/apprun/apprun/httpapi/contract"
)

// Every node the harness starts is served through a contract checker:
// each request to a documented operation and its response, success or
// error, is validated against the OpenAPI document the node serves
// (httpapi/contract). A fault fails the test that made the request; one
// found after its test ended fails the package's run (Main).
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

func sum(m map[string]int) (n int) {
	for _, v := range m {
		n += v
	}
	return n
}

// Main runs a test package whose tests start nodes (call it from the
// package's TestMain), then fails the run on a contract fault found after
// its test ended. With APPRUN_CONTRACT_REPORT naming a directory, it
// writes there which documented answers the package's tests saw, one file
// a package: `go run ./httpapi/contract/report DIR` adds them up over the
// whole suite and fails when a documented success answer was seen by no
// test (make test does). after runs once the tests have.
func Main(m *testing.M, after ...func()) {
	flag.Parse()
	code := m.Run()
	for _, f := range after {
		f()
	}
	contracts.Lock()
	defer contracts.Unlock()
	report := contract.Report{Seen: map[string]int{}}
	late := 0
	for _, c := range contracts.byDoc {
		for k, n := range c.Seen() {
			report.Seen[k] += n
		}
		report.Operations = c.Operations()
		for _, p := range c.Problems() {
			late++
			fmt.Fprintf(os.Stderr, "contract: %s\n", p)
		}
	}
	if late > 0 && code == 0 {
		fmt.Fprintf(os.Stderr, "contract: %d faults (some after their test ended)\n", late)
		code = 1
	}
	if dir := os.Getenv("APPRUN_CONTRACT_REPORT"); dir != "" && len(report.Seen) > 0 {
		if err := report.WriteTo(dir, filepath.Base(os.Args[0])); err != nil {
			fmt.Fprintf(os.Stderr, "contract: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
