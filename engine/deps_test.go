package engine_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDomainImportsNoInfrastructure keeps the domain pure: neither engine
// nor httpapi may depend on NATS, and engine not on net/http either, even
// through a library. The rule is checked on the whole dependency graph, as
// `go list -deps` prints it.
func TestDomainImportsNoInfrastructure(t *testing.T) {
	t.Parallel()
	for pkg, banned := range map[string][]string{
		"github.com/apprun/apprun/engine":  {"github.com/nats-io/", "net/http"},
		"github.com/apprun/apprun/httpapi": {"github.com/nats-io/"},
	} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, b := range banned {
				if dep == b || strings.HasPrefix(dep, b) && strings.HasSuffix(b, "/") {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
}
