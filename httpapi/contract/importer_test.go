package contract_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A package that names contract.Checker or llm.Client compiles none of
// libopenapi's generic code and little of openai-go's. When their fields
// held those libraries' types, every importer compiled it again: about
// 8,800 functions (6,300 of them libopenapi's) in this importer, and
// node/nodetest took 23 s to build with -race, six times over in make
// test. The importer is built as make test builds (-race, so that the
// build vet made is reused).
func TestAnImporterCompilesNoneOfTheirGenerics(t *testing.T) {
	t.Parallel()
	archive := filepath.Join(t.TempDir(), "importer.a")
	if out, err := exec.Command("go", "build", "-race", "-o", archive, "./testdata/importer").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command("go", "tool", "nm", archive).Output()
	if err != nil {
		t.Fatalf("go tool nm: %v", err)
	}
	theirs := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || f[len(f)-2] != "T" {
			continue
		}
		for _, lib := range []string{"github.com/pb33f/", "github.com/openai/"} {
			if strings.Contains(f[len(f)-1], lib) {
				theirs[lib] = append(theirs[lib], f[len(f)-1])
			}
		}
	}
	// libopenapi's: none. openai-go's: the 189 its small generic types
	// (param.Opt, ssestream.Stream, pagination) still bring through llm's
	// own inlined code, not the 2,500 its Client brought.
	for lib, most := range map[string]int{"github.com/pb33f/": 0, "github.com/openai/": 250} {
		if got := theirs[lib]; len(got) > most {
			t.Errorf("the importer compiled %d functions of %s (at most %d), e.g. %s", len(got), lib, most, got[0])
		}
	}
}
