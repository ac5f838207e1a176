package eventlog_test

import (
	"context"
	"testing"
	"time"

	"github.com/apprun/apprun/embednats/natstest"
	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/engine/logtest"
	"github.com/apprun/apprun/eventlog"
)

func openStore(t *testing.T) *eventlog.Store {
	t.Helper()
	nc := natstest.Connect(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := eventlog.Open(ctx, nc, eventlog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestJetStreamLogConforms(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	logtest.Run(t, func(*testing.T) engine.Log { return st.Log() })
}
