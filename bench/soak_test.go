package bench

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The soak, shortened: two nodes killed and restarted under its load,
// then every run over and the money exact. Its flatness verdicts are not
// asserted: half a minute is no soak.
func TestSoakKillsAndRestartsNodesAndEndsWithTheMoneyExact(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3-process cluster for a minute and more")
	}
	t.Parallel()
	plot := filepath.Join(t.TempDir(), "soak.svg")
	profiles := t.TempDir()
	cfg := Config{Binary: testBinary(t), SoakDuration: 30 * time.Second, SoakKills: 2, Plot: plot, ServerProfiles: profiles}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s := Run(ctx, cfg, "soak").Scenarios[0]
	for _, n := range s.Notes {
		t.Logf("soak: %s", n)
	}
	if s.Err != "" {
		t.Fatalf("soak: %s", s.Err)
	}
	for _, want := range []string{"nodes killed", "restarts that rejoined", "runs not terminal", "streams still open after",
		"accounts whose balance", "runs unfinished in the log", "runs the API lists", "API balances", "statements'", "apprun audit problems"} {
		found := false
		for _, f := range s.Figures {
			if strings.HasPrefix(f.Name, want) {
				found = true
				if f.Met == nil || !*f.Met {
					t.Errorf("%s: %g %s, target %s", f.Name, f.Value, f.Unit, f.Target)
				}
			}
		}
		if !found {
			t.Errorf("no figure %q", want)
		}
	}
	if len(s.Series) != len(soakQuantities)*clusterNodes {
		t.Errorf("%d series, want %d", len(s.Series), len(soakQuantities)*clusterNodes)
	}
	for _, se := range s.Series { // read from /metrics and /proc: 0 would be a name they lack
		if (se.Name == qHeap || se.Name == qFile) && (len(se.V) == 0 || slices.Min(se.V) <= 0) {
			t.Errorf("%s %s: samples %v, want the node's heap in use", se.Node, se.Name, se.V)
		}
	}
	for _, when := range []string{"2nd", "end"} { // of the nodes that were up then
		if got, _ := filepath.Glob(filepath.Join(profiles, "soak-node*-heap-"+when+".prof")); len(got) == 0 {
			t.Errorf("no node's heap profile at the %s mark in %s", when, profiles)
		}
	}
	f, err := os.Open(plot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for dec := xml.NewDecoder(f); ; {
		if _, err := dec.Token(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("the plot is not well-formed: %v", err)
		}
	}
}
