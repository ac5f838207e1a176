package audit_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/audit"
	"github.com/apprun/apprun/embednats"
	"github.com/apprun/apprun/eventlog"
	"github.com/apprun/apprun/ledger"
	. "github.com/apprun/apprun/node/nodetest"
	"github.com/apprun/apprun/subjects"
	"github.com/nats-io/nats.go/jetstream"
)

// What the chain cannot show, the checkpoints do: an account purged
// whole, an account's newest event erased and the read models rebuilt,
// and a log cut below a checkpoint kept outside it are each found, and
// the finding names the account's event or the checkpoint; the untampered
// log passes with both checkpoints.
func TestCheckpointsFindAnErasedAccountAnErasedNewestGrantAndACutTail(t *testing.T) {
	t.Parallel()
	for _, tamper := range []struct {
		name string
		do   func(t *testing.T, ctx context.Context, st jetstream.Stream, a, b string, cp ledger.Checkpoint)
		want func(a, b string, cp ledger.Checkpoint) string
		// exported: the audit is given the checkpoint kept outside the
		// log; else it has only the log's own.
		exported bool
	}{
		{"an account purged whole", func(t *testing.T, ctx context.Context, st jetstream.Stream, a, b string, _ ledger.Checkpoint) {
			if err := st.Purge(ctx, jetstream.WithPurgeSubject(subjects.Account(b))); err != nil {
				t.Fatal(err)
			}
		}, func(a, b string, _ ledger.Checkpoint) string { return "names account " + b + "'s event at sequence" }, false},
		{"the newest grant erased, the read models rebuilt", func(t *testing.T, ctx context.Context, st jetstream.Stream, a, b string, _ ledger.Checkpoint) {
			last, err := st.GetLastMsgForSubject(ctx, subjects.Account(a))
			if err != nil {
				t.Fatal(err)
			}
			if err := st.DeleteMsg(ctx, last.Sequence); err != nil {
				t.Fatal(err)
			}
		}, func(a, b string, _ ledger.Checkpoint) string { return "names account " + a + "'s event at sequence" }, false},
		{"the log cut below the exported checkpoint", func(t *testing.T, ctx context.Context, st jetstream.Stream, a, b string, cp ledger.Checkpoint) {
			info, err := st.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for seq := cp.Through; seq <= info.State.LastSeq; seq++ {
				if err := st.DeleteMsg(ctx, seq); err != nil && !strings.Contains(err.Error(), "not found") {
					t.Fatal(err)
				}
			}
		}, func(a, b string, cp ledger.Checkpoint) string {
			return "the exported checkpoint through " + strconv.FormatUint(cp.Through, 10)
		}, true},
	} {
		t.Run(tamper.name, func(t *testing.T) {
			t.Parallel()
			h := Start(t, WithLimits(NoLimits))
			a, _ := Activity(t, h)
			b := h.Account(20)
			h.Do("POST", "/admin/v1/accounts/"+a.ID+"/credits", AdminToken, map[string]any{"reason": "test", "amount": 7})
			logged := h.Do("POST", "/admin/v1/ledger/checkpoint", AdminToken, nil)
			own := h.Do("GET", "/api/v1/account/ledger/checkpoint", a.Key, nil)
			if logged.Status != 200 || own.Status != 200 {
				t.Fatalf("checkpoints: %d %s; %d %s", logged.Status, logged.Body, own.Status, own.Body)
			}
			cp, err := ledger.DecodeCheckpoint(logged.Body)
			if err != nil {
				t.Fatal(err)
			}
			h.Stop()
			pub := DevLedgerKey(t, h.Dir)
			exported := [][]byte{logged.Body, own.Body}
			var out bytes.Buffer
			if err := audit.Run(context.Background(), audit.Options{DataDir: h.Dir, PublicKey: pub, Checkpoints: exported}, &out); err != nil ||
				!strings.Contains(out.String(), "checkpoints: 1 in the log, 2 kept outside it, checked") {
				t.Fatalf("the untampered log: %v\n%s", err, out.String())
			}
			withStream(t, h.Dir, func(ctx context.Context, st jetstream.Stream, _ jetstream.JetStream) {
				tamper.do(t, ctx, st, a.ID, b.ID, cp)
			})
			if err := os.Remove(filepath.Join(h.Dir, "projections.db")); err != nil {
				t.Fatal(err)
			}
			h.Boot() // the read models rebuilt from what is left of the log
			h.WaitReady()
			h.Stop()
			out.Reset()
			o := audit.Options{DataDir: h.Dir, PublicKey: pub}
			if tamper.exported {
				o.Checkpoints = exported[:1]
			}
			err = audit.Run(context.Background(), o, &out)
			if want := tamper.want(a.ID, b.ID, cp); err == nil || !strings.Contains(out.String(), want) {
				t.Fatalf("not found (want %q): %v\n%s", want, err, out.String())
			}
		})
	}
}

// withStream opens a stopped node's store as an insider with the data
// directory would, and hands fn its stream.
func withStream(t *testing.T, dir string, fn func(ctx context.Context, st jetstream.Stream, js jetstream.JetStream)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns, err := embednats.New(embednats.Config{StoreDir: filepath.Join(dir, "nats")})
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	defer ns.Stop()
	nc, err := ns.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, eventlog.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	fn(ctx, st, js)
}
