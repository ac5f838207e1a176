package eventlog_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apprun/apprun/embednats/natstest"
	"github.com/apprun/apprun/eventlog"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/port/logtest"
	"github.com/apprun/apprun/subjects"
)

func openStore(t *testing.T) *eventlog.Store { return openStoreWith(t, eventlog.Config{}) }

// openStoreWith opens the streams configured by cfg on a new embedded server.
func openStoreWith(t *testing.T, cfg eventlog.Config) *eventlog.Store {
	t.Helper()
	nc := natstest.Connect(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := eventlog.Open(ctx, nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestJetStreamLogConforms(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	logtest.Run(t, func(*testing.T) port.Log { return st.Log() })
}

// A message written with a TTL is gone after it: Idempotency-Keys and
// webhook jobs expire instead of growing the log for good.
func TestAMessageWithATTLExpires(t *testing.T) {
	t.Parallel()
	l := openStore(t).Log()
	ctx := context.Background()
	subj := subjects.Of(subjects.KindKeyUse, "ttl")
	kept := subjects.Of(subjects.KindKeyUse, "kept")
	if _, err := l.Append(ctx, port.Entry{Subject: kept, Data: []byte(`k`)},
		port.Entry{Subject: subj, Data: []byte(`x`), TTL: time.Second, Expect: new(uint64)}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Last(ctx, subj); err != nil {
		t.Fatalf("right after the write: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := l.Last(ctx, subj)
		if errors.Is(err, port.ErrNoMessage) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a message with a 1 s TTL is still there after 10 s (%v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := l.Last(ctx, kept); err != nil {
		t.Fatalf("the message without a TTL: %v", err)
	}
	// Its subject is empty again: a compare-and-set expecting none holds.
	if _, err := l.Append(ctx, port.Entry{Subject: subj, Data: []byte(`y`), Expect: new(uint64)}); err != nil {
		t.Fatalf("a write expecting no message after the expiry: %v", err)
	}
}

// A message past the server's max_payload is refused before it is sent,
// as too large: not an outcome to resolve, and not worth trying again (a
// run's record event that passed it was retried until its deadline).
func TestAMessageTooLargeIsRefusedAsTooLarge(t *testing.T) {
	t.Parallel()
	l := openStore(t).Log()
	ctx := context.Background()
	big := make([]byte, 2<<20)
	subj := subjects.Of(subjects.KindRun, "run_toolarge")
	for _, entries := range [][]port.Entry{
		{{Subject: subj, Data: big, Expect: new(uint64)}},
		{{Subject: subj, Data: big}, {Subject: subj, Data: []byte(`x`)}},
		{{Subject: subj, Data: []byte(`x`)}, {Subject: subj, Data: big}},
	} {
		start := time.Now()
		_, err := l.Append(ctx, entries...)
		if !errors.Is(err, port.ErrTooLarge) || errors.Is(err, port.ErrAmbiguous) || errors.Is(err, port.ErrUnavailable) {
			t.Fatalf("%d entries, one of 2 MiB: %v", len(entries), err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("refused after %s", took)
		}
	}
	if _, err := l.Last(ctx, subj); !errors.Is(err, port.ErrNoMessage) {
		t.Fatalf("something was stored: %v", err)
	}
}
