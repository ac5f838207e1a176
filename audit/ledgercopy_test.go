package audit_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/audit"
	"github.com/apprun/apprun/eventlog"
	. "github.com/apprun/apprun/node/nodetest"
	"github.com/apprun/apprun/subjects"
	"github.com/nats-io/nats.go/jetstream"
)

// The ledger stream keeps what is removed from the log: an account's
// newest grant deleted with the log's credentials (which the chain alone
// cannot see) is named by the audit, without the ledger's key or a
// checkpoint; and the ledger stream refuses the same delete.
func TestTheLedgerStreamNamesAnEventRemovedFromTheLog(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(10)
	h.Do("POST", "/admin/v1/accounts/"+a.ID+"/credits", AdminToken, map[string]any{"reason": "test", "amount": 7})
	h.Stop()
	var out bytes.Buffer
	if err := audit.Run(context.Background(), audit.Options{DataDir: h.Dir}, &out); err != nil || !strings.Contains(out.String(), "ledger stream findings 0") {
		t.Fatalf("the untampered log: %v\n%s", err, out.String())
	}
	var grant uint64
	withStream(t, h.Dir, func(ctx context.Context, st jetstream.Stream, js jetstream.JetStream) {
		last, err := st.GetLastMsgForSubject(ctx, subjects.Account(a.ID))
		if err != nil {
			t.Fatal(err)
		}
		grant = last.Sequence
		ledger, err := js.Stream(ctx, eventlog.LedgerStreamName)
		if err != nil {
			t.Fatal(err)
		}
		for { // the server copies the log into the ledger stream as it goes
			m, err := ledger.GetLastMsgForSubject(ctx, subjects.Account(a.ID))
			if err == nil && bytes.Equal(m.Data, last.Data) {
				if err := ledger.DeleteMsg(ctx, m.Sequence); err == nil {
					t.Fatal("the ledger stream deleted a message")
				}
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("the grant was never copied into the ledger stream: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := st.DeleteMsg(ctx, grant); err != nil {
			t.Fatal(err)
		}
	})
	out.Reset()
	err := audit.Run(context.Background(), audit.Options{DataDir: h.Dir}, &out)
	if want := fmt.Sprintf("event %d on %s was removed from the log; the ledger stream keeps it", grant, subjects.Account(a.ID)); err == nil || !strings.Contains(out.String(), want) {
		t.Fatalf("a grant removed from the log: %v, want %q\n%s", err, want, out.String())
	}
}

// The ledger stream's configuration may be updated by whoever holds the
// log's credentials (a node must, to follow a change of replicas): limits
// that would drop what it copied are a finding.
func TestTheAuditFindsLimitsSetOnTheLedgerStream(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits))
	h.Account(10)
	h.Stop()
	withStream(t, h.Dir, func(ctx context.Context, _ jetstream.Stream, js jetstream.JetStream) {
		st, err := js.Stream(ctx, eventlog.LedgerStreamName)
		if err != nil {
			t.Fatal(err)
		}
		cfg := st.CachedInfo().Config
		cfg.MaxMsgs = 5
		if _, err := js.UpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	})
	var out bytes.Buffer
	err := audit.Run(context.Background(), audit.Options{DataDir: h.Dir}, &out)
	if want := "the ledger stream has limits (max_msgs 5"; err == nil || !strings.Contains(out.String(), want) {
		t.Fatalf("limits on the ledger stream: %v, want %q\n%s", err, want, out.String())
	}
}
