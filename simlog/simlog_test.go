package simlog_test

import (
	"testing"

	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/port/logtest"
	"github.com/apprun/apprun/simlog"
)

func TestSimulatedLogConforms(t *testing.T) {
	t.Parallel()
	logtest.Run(t, func(*testing.T) port.Log { return simlog.New() })
}
