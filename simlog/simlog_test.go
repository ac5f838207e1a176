package simlog_test

import (
	"testing"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/engine/logtest"
	"github.com/apprun/apprun/simlog"
)

func TestSimulatedLogConforms(t *testing.T) {
	t.Parallel()
	logtest.Run(t, func(*testing.T) engine.Log { return simlog.New() })
}
