package service_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service"
)

// The bounded log: after N runs and a sweep, the platform slots' subjects
// hold one message per slot used, not two per run.
func TestSlotHistoryIsCompactedToOneMessagePerSlot(t *testing.T) {
	t.Parallel()
	var log port.Log
	e := startEngineWith(t, false, engine.Limits{OwnerActiveRuns: 3, PlatformActiveRuns: 3},
		func(l port.Log) port.Log { log = l; return l }, okApp())
	ctx := context.Background()
	acct, err := e.OpenAccount(ctx, "a@example.com", 1000, ledger.By{Actor: "system:test", Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	const runs = 12
	for range runs {
		run, err := e.CreateRun(ctx, service.CreateRunRequest{AccountID: acct.AccountID, KeyID: acct.KeyID, AppSlug: "ok", Input: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		finished(t, e, run.RunNo)
	}
	count := func() (subjects, msgs int) {
		subs, err := log.Subjects(ctx, "apprun.slot.>")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range subs {
			if !strings.HasPrefix(s, "apprun.slot.") {
				t.Fatalf("subject %s", s)
			}
			if err := log.Read(ctx, s, 0, func(port.Message) error { msgs++; return nil }); err != nil {
				t.Fatal(err)
			}
		}
		return len(subs), msgs
	}
	if _, before := count(); before < runs {
		t.Fatalf("%d slot messages before the sweep, want a claim and a release per run", before)
	}
	if err := e.CompactSlots(ctx); err != nil {
		t.Fatal(err)
	}
	if subjects, after := count(); after != subjects || subjects > 3 {
		t.Fatalf("after the sweep: %d messages on %d slot subjects, want one per slot (at most 3)", after, subjects)
	}
	// The next admission's compare-and-set on a compacted slot holds.
	run, err := e.CreateRun(ctx, service.CreateRunRequest{AccountID: acct.AccountID, KeyID: acct.KeyID, AppSlug: "ok", Input: map[string]any{}})
	if err != nil {
		t.Fatalf("a create after compaction: %v", err)
	}
	finished(t, e, run.RunNo)
}
