package audit

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/embednats"
	"github.com/apprun/apprun/eventlog"
	"github.com/apprun/apprun/node"
	"github.com/apprun/apprun/node/nodetest"
	"github.com/apprun/apprun/subjects"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A live audit replays the log as far as the node's snapshot of its read
// models goes. A run that expires meanwhile loses its events from under
// the replay; its expiry marker, past the snapshot, stands for them, so
// its charge is not reported as a charge without a run.
func TestALiveAuditTakesTheExpiriesPastItsSnapshot(t *testing.T) {
	t.Parallel()
	natsAddr, secret, keyFile := nodetest.FreeAddr(t), "late-expiry-secret-0123456789", nodetest.LedgerKeyFile(t)
	h := nodetest.Start(t, nodetest.WithLimits(nodetest.NoLimits), nodetest.WithRetention(nodetest.TestAppSlug, 200*time.Millisecond),
		func(c *node.Config) { c.NATSListen, c.ClusterSecret, c.LedgerKeyFile = natsAddr, secret, keyFile })
	a := h.Account(100)
	runNo := h.Create(a, nodetest.RunTestApp("ok"))
	h.WaitRun(a, runNo)

	nc, err := nats.Connect("nats://"+natsAddr, nats.UserInfo(embednats.User, secret))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := js.Stream(ctx, eventlog.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	var marker *jetstream.RawStreamMsg
	for marker == nil {
		if marker, err = st.GetLastMsgForSubject(ctx, subjects.Expired(runNo)); err != nil && ctx.Err() != nil {
			t.Fatalf("run %s never expired: %v", runNo, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	rep, _, err := replay(ctx, nc, nil, nil, false, marker.Sequence-1)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Violations {
		if strings.Contains(v, runNo) {
			t.Fatalf("a run expired past the snapshot: %s", v)
		}
	}
	if !rep.Expired[runNo] {
		t.Fatalf("run %s expired past the snapshot is not known as expired: %+v", runNo, rep.AuditReport)
	}
}
