package eventlog

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apprun/apprun/embednats/natstest"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/subjects"
)

// logOfRun is a log on a fresh embedded JetStream holding n events of
// runNo, and the run's subject.
func logOfRun(t *testing.T, runNo string, n int) (*Log, string) {
	t.Helper()
	ctx := context.Background()
	st, err := Open(ctx, natstest.Connect(t, false), Config{})
	if err != nil {
		t.Fatal(err)
	}
	l, subj := st.Log(), subjects.Of(subjects.KindRun, runNo)
	for range n {
		if _, err := l.Append(ctx, port.Entry{Subject: subj, Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	return l, subj
}

// A node makes at most maxLogReaders subject reads at once; one more waits
// for a turn, bounded by its context, and reads once a turn is free.
func TestReadsWaitForATurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, subj := logOfRun(t, "run_turns", 3)
	for range maxLogReaders { // every turn taken
		l.readers <- struct{}{}
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	n := 0
	count := func(port.Message) error { n++; return nil }
	if err := l.Read(short, subj, 0, count); err == nil || !strings.Contains(err.Error(), "waiting for a turn") {
		t.Fatalf("read with every turn taken: %v, want a wait that ends with the context", err)
	}
	<-l.readers // one turn free
	if err := l.Read(ctx, subj, 0, count); err != nil || n != 3 {
		t.Fatalf("read with a turn free: %d messages, %v; want 3", n, err)
	}
}

// countingCtx counts the contexts derived from it: context registers a
// child with a parent's AfterFunc when the parent is not one of its own
// (Value answers nothing, so it is not taken for one).
type countingCtx struct {
	context.Context
	derived atomic.Int32
}

func (c *countingCtx) AfterFunc(f func()) func() bool {
	c.derived.Add(1)
	return context.AfterFunc(c.Context, f)
}

func (c *countingCtx) Value(any) any { return nil }

// A read derives no context from its caller's: a context keeps the map it
// makes for its children as long as it lives, and an event stream's lives
// as long as the stream (half a KiB a stream, kept for good). The
// caller's context still ends a read that waits for a turn.
func TestAReadDerivesNoContextFromItsCaller(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, subj := logOfRun(t, "run_derived", 1)
	base, cancel := context.WithCancel(ctx)
	defer cancel()
	caller := &countingCtx{Context: base}
	n := 0
	if err := l.Read(caller, subj, 0, func(port.Message) error { n++; return nil }); err != nil || n != 1 {
		t.Fatalf("read: %d messages, %v; want 1", n, err)
	}
	if d := caller.derived.Load(); d != 0 {
		t.Fatalf("the read derived %d contexts from its caller's", d)
	}

	for range maxLogReaders { // every turn taken: the read waits
		l.readers <- struct{}{}
	}
	defer func() {
		for range maxLogReaders {
			<-l.readers
		}
	}()
	cancel()
	if err := l.Read(caller, subj, 0, func(port.Message) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("a read waiting for a turn whose caller gave up: %v, want context.Canceled", err)
	}
}

// A long read is bounded by each of its requests, not by one deadline for
// the whole (issue 50: a resume of a finished 100,000-event run was cut
// "unexpected EOF" when reading its log took more than the log's 5 s on a
// busy machine). Here each batch takes half the timeout to handle, and
// the read of four batches takes twice it.
func TestALongReadIsBoundedByEachRequestNotTheWhole(t *testing.T) {
	t.Parallel()
	l, subj := logOfRun(t, "run_long", 3*readBatch+1)
	l.timeout = time.Second // a batch here takes milliseconds, even on a loaded machine
	n := 0
	err := l.Read(context.Background(), subj, 0, func(port.Message) error {
		if n%readBatch == 0 {
			time.Sleep(l.timeout / 2) // a slow reader: a stream's client
		}
		n++
		return nil
	})
	if err != nil || n != 3*readBatch+1 {
		t.Fatalf("read %d of %d messages: %v", n, 3*readBatch+1, err)
	}
}
