package eventlog

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/embednats/natstest"
	"github.com/apprun/apprun/engine"
)

// A node makes at most maxLogReaders subject reads at once; one more waits
// for a turn, bounded by its context, and reads once a turn is free.
func TestReadsWaitForATurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := Open(ctx, natstest.Connect(t, false), Config{})
	if err != nil {
		t.Fatal(err)
	}
	l := st.Log()
	subj := engine.SubjectOf(engine.KindRun, "run_turns")
	for range 3 {
		if _, err := l.Append(ctx, engine.Entry{Subject: subj, Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	for range maxLogReaders { // every turn taken
		l.readers <- struct{}{}
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	n := 0
	count := func(engine.Message) error { n++; return nil }
	if err := l.Read(short, subj, 0, count); err == nil || !strings.Contains(err.Error(), "waiting for a turn") {
		t.Fatalf("read with every turn taken: %v, want a wait that ends with the context", err)
	}
	<-l.readers // one turn free
	if err := l.Read(ctx, subj, 0, count); err != nil || n != 3 {
		t.Fatalf("read with a turn free: %d messages, %v; want 3", n, err)
	}
}
