package layout

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/apprun/apprun/"

// allowed is what each package's non-test files may import of apprun's
// own, by layer: the domain imports nothing above it; the service, the
// domain and the ports; the adapters, mostly the ports and the domain
// (each row says which others: billing sells through the service, apps
// reads the web and the model through outbound and llm); the edge and the
// surfaces, the service, the domain and the edge (and httpapi's one error
// mapping); the node, all of them; the commands and the tools, anything.
// "*" allows every package.
var allowed = map[string][]string{
	// The domain: the vocabulary and the rules.
	"ledger":   {},
	"subjects": {},
	"engine":   {"ledger", "subjects"},
	// Tools of the domain.
	"engine/internal/errorsgen":               {},
	"engine/internal/errorsgen/cmd/errorsgen": {"engine/internal/errorsgen"},
	// The ports the service runs on, and their conformance suite.
	"port":         {},
	"port/logtest": {"port", "subjects"},
	// The service: every use case, on the ports.
	"service":        {"engine", "ledger", "port", "subjects", "service/live", "service/store", "service/worker"},
	"service/live":   {"engine", "port"},
	"service/store":  {"engine", "ledger", "port", "subjects"},
	"service/worker": {"port"},
	// Adapters of the ports, and what they stand on.
	"inputschema":        {"engine"},
	"simlog":             {"port"},
	"eventlog":           {"engine", "port", "subjects", "internal/jsconsume"},
	"projections":        {"engine", "ledger", "port", "subjects", "internal/jsconsume"},
	"embednats":          {},
	"embednats/natstest": {"embednats"},
	"outbound":           {},
	"webhook":            {"port", "outbound"},
	"mailer":             {"port"},
	"llm":                {},
	"llm/llmtest":        {},
	"apps":               {"engine", "llm", "outbound"},
	"internal/jsconsume": {},
	"internal/logbuf":    {},
	"internal/mailpit":   {"internal/logbuf"},
	"internal/layout":    {},
	"billing":            {"engine", "service"},
	"billing/stripemock": {},
	// The edge and the surfaces.
	"edge":                    {"engine"},
	"httpapi":                 {"engine", "ledger", "port", "service", "service/live", "billing", "edge"},
	"httpapi/contract":        {},
	"httpapi/contract/report": {"httpapi/contract"},
	// oapi-codegen's client, generated (the contract tests drive it).
	"httpapi/contract/apiclient": {},
	"web":                        {"engine", "ledger", "port", "service", "apps", "billing", "edge", "httpapi"},
	"mcp":                        {"engine", "ledger", "port", "service", "service/live", "httpapi"},
	// What a stopped node's data is checked with.
	"audit": {"engine", "ledger", "subjects", "port", "eventlog", "projections", "embednats"},
	// The node: every part, wired.
	"node": {"apps", "billing", "edge", "embednats", "engine", "eventlog", "httpapi", "inputschema", "ledger", "llm", "mailer", "mcp",
		"outbound", "port", "projections", "service", "subjects", "web", "webhook"},
	"node/nodetest": {"*"},
	// The Go client, apart from the server.
	"client":         {},
	"client/example": {"client"},
	// The binary, the load tool, the simulation and the tools.
	"cmd/apprun":         {"*"},
	"bench":              {"*"},
	"sim":                {"*"},
	"tools/attack":       {"*"},
	"tools/doccheck":     {"*"},
	"tools/walk":         {"*"},
	"tools/walk/overlay": {"*"},
	"tools/walk/trace":   {"*"},
}

// Every package imports only what its layer allows (above).
func TestEveryPackageImportsOnlyWhatItsLayerAllows(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		if strings.HasPrefix(pkg, "tools/clientcheck") {
			continue
		}
		may, known := allowed[pkg]
		if !known {
			t.Errorf("%s is not in internal/layout's table: say what it may import, there and in docs/architecture.md", pkg)
			continue
		}
		if slices.Contains(may, "*") {
			continue
		}
		for _, imp := range fields[1:] {
			dep, ours := strings.CutPrefix(imp, module)
			if ours && !slices.Contains(may, dep) {
				t.Errorf("%s imports %s, which its layer does not allow (internal/layout, docs/architecture.md)", pkg, dep)
			}
		}
	}
}

// docs/architecture.md's table of who may import whom is this table: the
// same packages, each with the same imports ("nothing", "anything").
func TestTheArchitectureDocsTableIsThisTable(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(data), "<!-- layout table -->")
	if !ok {
		t.Fatal("docs/architecture.md has no <!-- layout table -->")
	}
	name := regexp.MustCompile("`([^`]+)`")
	documented := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(after), "\n") {
		if !strings.HasPrefix(line, "|") {
			break // the table's end
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 3 || !strings.Contains(cells[1], "`") {
			continue // its head
		}
		var may []string
		switch imports := strings.TrimSpace(cells[2]); imports {
		case "anything":
			may = []string{"*"}
		case "nothing":
		default:
			for _, m := range name.FindAllStringSubmatch(imports, -1) {
				may = append(may, m[1])
			}
		}
		for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
			if _, twice := documented[m[1]]; twice {
				t.Errorf("docs/architecture.md lists %s twice", m[1])
			}
			documented[m[1]] = may
		}
	}
	for pkg, may := range allowed {
		doc, ok := documented[pkg]
		switch {
		case !ok:
			t.Errorf("docs/architecture.md's table has no row for %s (may import %v)", pkg, may)
		case !sameSet(doc, may):
			t.Errorf("docs/architecture.md says %s may import %v; this table says %v", pkg, doc, may)
		}
	}
	for pkg := range documented {
		if _, ok := allowed[pkg]; !ok {
			t.Errorf("docs/architecture.md's table lists %s, which this table does not", pkg)
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
