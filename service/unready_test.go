package service_test

import (
	"errors"
	"testing"

	"github.com/apprun/apprun/engine"

	"github.com/apprun/apprun/inputschema"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service"
	"github.com/apprun/apprun/simlog"
)

// lostWindows are shared windows a server that restarted took away.
type lostWindows struct{ port.Windows }

var errLost = errors.New("the windows were lost")

func (lostWindows) Unavailable() error { return errLost }

// A node is unready while the shared windows cannot count, since every
// limited request counts in them; not when it counts in memory
// (standalone) or counts nothing.
func TestUnreadyCountsTheWindowsOnlyWhereTheyAreShared(t *testing.T) {
	t.Parallel()
	on := engine.Limits{CreatePerMinute: 10, ReadsPerMinute: 120}
	for _, c := range []struct {
		name       string
		lim        engine.Limits
		standalone bool
		want       error
	}{
		{"shared windows", on, false, errLost},
		{"reads only", engine.Limits{ReadsPerMinute: 120}, false, errLost},
		{"standalone", on, true, nil},
		{"no limits", engine.Limits{}, false, nil},
	} {
		ports := simlog.New().Ports()
		ports.Windows = lostWindows{ports.Windows}
		cat, err := engine.NewCatalog(inputschema.Compile, okApp())
		if err != nil {
			t.Fatal(err)
		}
		e, err := engineOn(ports, cat, c.lim, func(cfg *service.Config) { cfg.Standalone = c.standalone })
		if err != nil {
			t.Fatal(err)
		}
		if got := e.Unready(); !errors.Is(got, c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("%s: Unready %v, want %v", c.name, got, c.want)
		}
	}
}
