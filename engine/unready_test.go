package engine_test

import (
	"errors"
	"testing"

	. "github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/inputschema"
	"github.com/apprun/apprun/simlog"
)

// lostWindows are shared windows a server that restarted took away.
type lostWindows struct{ Windows }

var errLost = errors.New("the windows were lost")

func (lostWindows) Unavailable() error { return errLost }

// A node is unready while the shared windows cannot count, since every
// limited request counts in them; not when it counts in memory
// (standalone) or counts nothing.
func TestUnreadyCountsTheWindowsOnlyWhereTheyAreShared(t *testing.T) {
	t.Parallel()
	on := Limits{CreatePerMinute: 10, ReadsPerMinute: 120}
	for _, c := range []struct {
		name       string
		lim        Limits
		standalone bool
		want       error
	}{
		{"shared windows", on, false, errLost},
		{"reads only", Limits{ReadsPerMinute: 120}, false, errLost},
		{"standalone", on, true, nil},
		{"no limits", Limits{}, false, nil},
	} {
		ports := simlog.New().Ports()
		ports.Windows = lostWindows{ports.Windows}
		cat, err := NewCatalog(inputschema.Compile, okApp())
		if err != nil {
			t.Fatal(err)
		}
		e, err := engineOn(ports, cat, c.lim, func(cfg *Config) { cfg.Standalone = c.standalone })
		if err != nil {
			t.Fatal(err)
		}
		if got := e.Unready(); !errors.Is(got, c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("%s: Unready %v, want %v", c.name, got, c.want)
		}
	}
}
