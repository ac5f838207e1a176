package eventlog_test

import (
	"context"
	"testing"
	"time"

	"github.com/apprun/apprun/embednats/natstest"
	"github.com/apprun/apprun/eventlog"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/subjects"
	"github.com/nats-io/nats.go/jetstream"
)

// The ledger stream keeps a copy of every account event, checkpoint and
// price of the log, and nothing else; it refuses deletes and purges, so
// an event removed from the log is still there.
func TestTheLedgerStreamKeepsWhatTheLogLoses(t *testing.T) {
	t.Parallel()
	nc := natstest.Connect(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := eventlog.Open(ctx, nc, eventlog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	acct := subjects.Account("acct_1")
	seq, err := st.Log().Append(ctx, port.Entry{Subject: acct, Data: []byte(`{"type":"account_opened"}`)},
		port.Entry{Subject: subjects.Of(subjects.KindRun, "run_1"), Data: []byte(`{"type":"run_created"}`)},
		port.Entry{Subject: subjects.Price("app"), Data: []byte(`{"type":"price_set"}`)})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	ledger, err := js.Stream(ctx, eventlog.LedgerStreamName)
	if err != nil {
		t.Fatal(err)
	}
	for {
		info, err := ledger.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs == 2 {
			break
		}
		if ctx.Err() != nil || info.State.Msgs > 2 {
			t.Fatalf("the ledger stream holds %d messages, want the account event and the price", info.State.Msgs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	log, err := js.Stream(ctx, eventlog.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if err := log.DeleteMsg(ctx, seq-2); err != nil {
		t.Fatalf("the log refuses a delete: %v", err)
	}
	if err := ledger.DeleteMsg(ctx, 1); err == nil {
		t.Fatal("the ledger stream deleted a message")
	}
	if err := ledger.Purge(ctx); err == nil {
		t.Fatal("the ledger stream was purged")
	}
	m, err := ledger.GetLastMsgForSubject(ctx, acct)
	if err != nil || string(m.Data) != `{"type":"account_opened"}` {
		t.Fatalf("the ledger's copy of the event removed from the log: %v %v", m, err)
	}
	if got := m.Header.Get("Nats-Stream-Source"); got == "" {
		t.Fatalf("the copy does not name its place in the log: %v", m.Header)
	}
	t.Logf("source header %q", m.Header.Get("Nats-Stream-Source"))
}
