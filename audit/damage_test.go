package audit_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apprun/apprun/audit"
	"github.com/apprun/apprun/eventlog"
	. "github.com/apprun/apprun/node/nodetest"
)

// One byte changed in the log's block file: the store drops what it can
// no longer read without a word, so the audit's replay read less than
// the store counts (or the store, rebuilding without its index, says it
// lost data). Either way the audit reports damage to the log, first and
// by name, and fails; it is not passed off as drift.
func TestTheAuditReportsADamagedBlockFileAsDamage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		dropIndex bool
	}{{"with the store's index", false}, {"without it", true}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := Start(t, WithLimits(NoLimits))
			Activity(t, h)
			h.Stop()
			var out bytes.Buffer
			if err := audit.Run(context.Background(), audit.Options{DataDir: h.Dir}, &out); err != nil || strings.Contains(out.String(), "LOG DAMAGED") {
				t.Fatalf("the untouched log: %v\n%s", err, out.String())
			}
			msgs := filepath.Join(h.Dir, "nats", "jetstream", "$G", "streams", eventlog.StreamName, "msgs")
			blk := filepath.Join(msgs, "1.blk")
			data, err := os.ReadFile(blk)
			if err != nil {
				t.Fatal(err)
			}
			data[len(data)/2] ^= 0xff
			if err := os.WriteFile(blk, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if c.dropIndex {
				if err := os.Remove(filepath.Join(msgs, "index.db")); err != nil {
					t.Fatal(err)
				}
			}
			out.Reset()
			err = audit.Run(context.Background(), audit.Options{DataDir: h.Dir}, &out)
			if err == nil || !strings.Contains(out.String(), "LOG DAMAGED: the log is damaged") || !strings.Contains(out.String(), "restore the data directory") {
				t.Fatalf("a damaged block file: %v\n%s", err, out.String())
			}
		})
	}
}
