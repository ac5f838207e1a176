package audit_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/audit"
	"github.com/apprun/apprun/embednats"
	"github.com/apprun/apprun/eventlog"
	"github.com/apprun/apprun/node"
	. "github.com/apprun/apprun/node/nodetest"
	"github.com/apprun/apprun/subjects"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A running node is audited without stopping it: the log is read through
// NATS, the read models through a snapshot the node's admin API takes,
// and the node goes on serving. The untampered node passes; a grant
// forged through NATS on the live node is found and named; a live audit
// without the log's address, or with a wrong admin token, says so.
func TestARunningNodeIsAuditedThroughNATSAndASnapshotOfItsReadModels(t *testing.T) {
	t.Parallel()
	natsAddr, secret := FreeAddr(t), "live-audit-secret-0123456789"
	keyFile := LedgerKeyFile(t)
	h := Start(t, WithLimits(NoLimits), func(c *node.Config) { c.NATSListen, c.ClusterSecret, c.LedgerKeyFile = natsAddr, secret, keyFile })
	a, _ := Activity(t, h)
	o := audit.Options{NATSURL: "nats://" + natsAddr, ClusterSecret: secret, Node: h.Srv.URL, AdminToken: AdminToken,
		PublicKey: publicKeyOf(t, keyFile), JSON: true}
	run := func(o audit.Options) (audit.Summary, error) {
		var out bytes.Buffer
		err := audit.Run(context.Background(), o, &out)
		var sum audit.Summary
		if err == nil || out.Len() > 0 {
			if jerr := json.Unmarshal(out.Bytes(), &sum); jerr != nil {
				t.Fatalf("audit output is not its JSON summary: %v\n%s", jerr, out.String())
			}
		}
		return sum, err
	}
	sum, err := run(o)
	if err != nil || !sum.Passed || !strings.Contains(sum.ReadModels, "a snapshot of "+h.Srv.URL) || sum.Signed == 0 || sum.Runs.All != 3 {
		t.Fatalf("the untampered running node: %v\n%+v", err, sum)
	}
	if got := h.Do("GET", "/api/v1/account", a.Key, nil); got.Status != 200 {
		t.Fatalf("the node after its live audit: %d %s", got.Status, got.Body)
	}

	nc, err := nats.Connect("nats://"+natsAddr, nats.UserInfo(embednats.User, secret))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, eventlog.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	forgeGrant(t, ctx, st, js, a.ID)
	sum, err = run(o)
	want := "on " + subjects.Account(a.ID) + " (credits_granted): ledger: the event is not signed"
	if err == nil || sum.Passed || !strings.Contains(strings.Join(sum.Violations, "\n"), want) {
		t.Fatalf("a grant forged on the running node: %v, want a violation naming %q\n%+v", err, want, sum)
	}

	noLog := o
	noLog.NATSURL = ""
	if _, err := run(noLog); err == nil || !strings.Contains(err.Error(), "--nats-url") {
		t.Fatalf("a live audit without the log's address: %v", err)
	}
	wrong := o
	wrong.AdminToken = "not-the-admin-token"
	if _, err := run(wrong); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a live audit with a wrong admin token: %v", err)
	}
}

func publicKeyOf(t *testing.T, keyFile string) ed25519.PublicKey {
	t.Helper()
	key, err := node.ReadSigningKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return key.Public().(ed25519.PublicKey)
}
