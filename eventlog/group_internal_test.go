package eventlog

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/apprun/apprun/embednats/natstest"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/subjects"
)

// A lazy record (a key's use) waits for the next group commit and is
// written in its batch, beside the admissions, not on its own; a rollup
// in a batch still leaves one message on its subject.
func TestALazyRecordRidesTheNextBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := Open(ctx, natstest.Connect(t, false), Config{})
	if err != nil {
		t.Fatal(err)
	}
	l := st.Log()
	g := &l.group
	g.mu.Lock()
	g.busy = true // a batch is being committed: what comes now waits
	g.mu.Unlock()

	use := subjects.Of(subjects.KindKeyUse, "key_lazy")
	type result struct {
		seq uint64
		err error
	}
	multi, lazy := make(chan result, 1), make(chan result, 1)
	go func() {
		seq, err := l.Append(ctx, port.Entry{Subject: subjects.Of(subjects.KindRun, "run_a"), Data: []byte(`{}`)},
			port.Entry{Subject: subjects.Of(subjects.KindRun, "run_b"), Data: []byte(`{}`)})
		multi <- result{seq, err}
	}()
	waitQueued(t, g, 1)
	go func() {
		seq, err := l.Append(ctx, port.Entry{Subject: use, Data: []byte(`1`), Rollup: true, Lazy: true})
		lazy <- result{seq, err}
	}()
	waitQueued(t, g, 2) // not written at once: queued behind the admissions
	go g.run()          // the batch in flight returns
	m, z := <-multi, <-lazy
	if m.err != nil || z.err != nil {
		t.Fatalf("appends: %v, %v", m.err, z.err)
	}
	if z.seq != m.seq+1 {
		t.Fatalf("the lazy record got sequence %d, the admissions end at %d: not one batch", z.seq, m.seq)
	}

	if !fromBatch(t, l, z.seq) {
		t.Fatalf("the lazy record at %d carries no batch header", z.seq)
	}

	// Alone, it is one plain write, not a batch of one (whose staging
	// costs as much as a batch of many); the rollup keeps only the newest.
	second, err := l.Append(ctx, port.Entry{Subject: use, Data: []byte(`2`), Rollup: true, Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	if fromBatch(t, l, second) {
		t.Fatalf("a lazy record alone was written as an atomic batch (sequence %d)", second)
	}
	var seen []string
	if err := l.Read(ctx, use, 0, func(m port.Message) error { seen = append(seen, string(m.Data)); return nil }); err != nil {
		t.Fatal(err)
	}
	if last, err := l.Last(ctx, use); err != nil || last.Seq != second || len(seen) != 1 || seen[0] != "2" {
		t.Fatalf("after two lazy rollups: last %+v (%v), messages %q; want only the second, at %d", last, err, seen, second)
	}
}

// waitQueued waits until the group holds n appends.
func waitQueued(t *testing.T, g *group, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		g.mu.Lock()
		queued := len(g.queue)
		g.mu.Unlock()
		if queued == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d appends waiting for the group, want %d", queued, n)
		}
		runtime.Gosched()
	}
}

// fromBatch says whether the message at seq was stored by an atomic batch
// (the server keeps the batch's headers on each of its messages).
func fromBatch(t *testing.T, l *Log, seq uint64) bool {
	t.Helper()
	m, err := l.stream.GetMsg(context.Background(), seq)
	if err != nil {
		t.Fatal(err)
	}
	return m.Header.Get("Nats-Batch-Id") != ""
}
