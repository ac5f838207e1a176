package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/apprun/apprun/audit"
	"github.com/apprun/apprun/engine"
	. "github.com/apprun/apprun/node/nodetest"
)

func TestRunsExpireAfterRetentionButTheLedgerStays(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits), WithRetention(TestAppSlug, 300*time.Millisecond))
	a := h.Account(100)
	expiring := h.Create(a, RunTestApp("ok"))
	h.WaitRun(a, expiring)
	failing := h.Create(a, RunTestApp("fail"))
	h.WaitRun(a, failing)
	kept := h.Create(a, ColdEmailRun()) // 30-day retention
	h.WaitRun(a, kept)
	// The record's head (what the run was charged for): its charge keeps
	// its hash after the run expired (issue 46). The test App has no
	// definition file, so no version.
	headHash := engine.RecordHead{RunNo: expiring, AppSlug: TestAppSlug, Input: json.RawMessage(`{"mode":"ok"}`), CreditCost: 10}.Hash()

	deadline := time.Now().Add(15 * time.Second)
	for _, no := range []string{expiring, failing} {
		for {
			r := h.Do("GET", "/api/v1/runs/"+no, a.Key, nil)
			if r.Status == 404 && r.ErrorCode(t) == "run_not_found" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %s still answers %d after its retention", no, r.Status)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if r := h.Do("GET", "/api/v1/runs/"+no+"/events", a.Key, nil); r.Status != 404 {
			t.Fatalf("events of an expired run: %d", r.Status)
		}
		if r := h.Do("GET", "/api/v1/runs/"+no+"/record", a.Key, nil); r.Status != 404 {
			t.Fatalf("the record of an expired run: %d", r.Status)
		}
	}
	if r := h.Do("GET", "/api/v1/runs/"+kept, a.Key, nil); r.Status != 200 {
		t.Fatalf("a run within its retention: %d", r.Status)
	}
	if runs := h.Do("GET", "/api/v1/runs", a.Key, nil).JSON(t)["data"].([]any); len(runs) != 1 {
		t.Fatalf("history after expiry has %d runs, want only the kept one", len(runs))
	}
	// The statement keeps the charges and the refund, with their run
	// numbers and their Apps (the ledger's own, not the runs').
	lines := h.Do("GET", "/api/v1/account/ledger", a.Key, nil).JSON(t)["data"].([]any)
	seen := map[string]int{}
	for _, l := range lines {
		m := l.(map[string]any)
		if no, _ := m["run_no"].(string); no != "" {
			app, _ := m["app_slug"].(string)
			if no == expiring && m["type"] == "charge" && m["record"] != headHash {
				t.Fatalf("the expired run's charge %v does not keep its record's head hash %v", m, headHash)
			}
			seen[no+" "+m["type"].(string)+" "+app]++
		}
	}
	for _, want := range []string{expiring + " charge " + TestAppSlug, failing + " charge " + TestAppSlug, failing + " refund " + TestAppSlug,
		kept + " charge cold-email-writer"} {
		if seen[want] != 1 {
			t.Errorf("statement lacks %q after expiry: %v", want, seen)
		}
	}
	if bal, _ := h.Balance(a); bal != 100-10-25 {
		t.Fatalf("balance %d, want %d", bal, 100-10-25)
	}

	// The log and the read models still agree, and a rebuild reaches the same state.
	h.Stop()
	var out bytes.Buffer
	if err := audit.Run(context.Background(), audit.Options{DataDir: h.Dir}, &out); err != nil {
		t.Fatalf("audit after expiry: %v\n%s", err, out.String())
	}
	live := Dump(t, h.Dir)
	if err := os.Remove(filepath.Join(h.Dir, "projections.db")); err != nil {
		t.Fatal(err)
	}
	h.Boot()
	h.Stop()
	if rebuilt := Dump(t, h.Dir); !reflect.DeepEqual(live, rebuilt) {
		t.Fatalf("rebuild after expiry differs:\nlive    %v\nrebuilt %v", live, rebuilt)
	}
}
