package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/apprun/apprun/apps"
	"github.com/apprun/apprun/embednats/natstest"
	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/eventlog"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/subjects"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The probe writes what an admission writes: after its admissions the log
// audits as that many runs created and charged, with no violation (a
// charge without its run, a run charged twice…).
func TestProbeWritesWhatAnAdmissionWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nc := natstest.Connect(t, false)
	e, ports, err := preparedEngine(ctx, nc, engine.Limits{CreatePerMinute: 1000, PlatformActiveRuns: 1000}, 1, true, apps.TestSleep())
	if err != nil {
		t.Fatal(err)
	}
	p, err := newProbe(ctx, e, ports, apps.TestSleepSlug, 100, 1)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := p.admit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	rep := auditLog(t, nc)
	if len(rep.Runs) != 5 || rep.Active != 5 || rep.Charged != 5*p.price.CreditCost || len(rep.Violations) > 0 {
		t.Fatalf("after 5 probe admissions: %d runs (%d active), charged %d at price %d, violations %v",
			len(rep.Runs), rep.Active, rep.Charged, p.price.CreditCost, rep.Violations)
	}
}

// The probe's runs write what a completed run writes: after them the log
// audits as that many runs completed, each charged once and settled, with
// no violation; each run's slot is released; and each run's log is created,
// started, one event a step, completed.
func TestProbeRunsWriteWhatACompletedRunWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nc := natstest.Connect(t, false)
	e, ports, err := preparedEngine(ctx, nc, engine.Limits{CreatePerMinute: 1000, PlatformActiveRuns: 1000}, 1, true, apps.Default()...)
	if err != nil {
		t.Fatal(err)
	}
	p, err := newProbe(ctx, e, ports, apps.ColdEmailSlug, 1000, 1)
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	for range 3 {
		runNo, _, err := p.run(ctx, 6, []byte(sampleOutput))
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, runNo)
	}
	rep := auditLog(t, nc)
	if len(rep.Runs) != 3 || rep.Completed != 3 || rep.Active != 0 || rep.Charged != 3*p.price.CreditCost ||
		rep.Refunded != 0 || len(rep.Violations) > 0 {
		t.Fatalf("after 3 probe runs: %d runs (%d completed, %d active), charged %d at price %d, refunded %d, violations %v",
			len(rep.Runs), rep.Completed, rep.Active, rep.Charged, p.price.CreditCost, rep.Refunded, rep.Violations)
	}
	if a := rep.Accounts[p.acct.ID]; a.Balance != 1000-3*p.price.CreditCost || a.Active != 0 {
		t.Fatalf("the probe's account after 3 runs: balance %d, active %d; want %d and none",
			a.Balance, a.Active, 1000-3*p.price.CreditCost)
	}
	for slot := 1; slot <= 3; slot++ {
		var last engine.SlotEvent
		err := ports.Log.Read(ctx, subjects.Of(subjects.KindSlot, strconv.Itoa(slot)), 0, func(m port.Message) error {
			return json.Unmarshal(m.Data, &last)
		})
		if err != nil || last.Type != "slot_released" || last.RunNo != runs[slot-1] {
			t.Fatalf("slot %d ends with %+v (%v), want run %s's release", slot, last, err, runs[slot-1])
		}
	}
	for _, runNo := range runs {
		var types []engine.RunEventType
		err := ports.Log.Read(ctx, subjects.Of(subjects.KindRun, runNo), 0, func(m port.Message) error {
			ev, err := engine.DecodeRunEvent(m.Data)
			types = append(types, ev.Type)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprint([]engine.RunEventType{engine.RunCreated, engine.RunStarted, engine.RunRecorded, engine.ToolRunning, engine.ToolRunning,
			engine.ToolRunning, engine.ToolRunning, engine.ToolRunning, engine.ToolRunning, engine.RunCompleted})
		if fmt.Sprint(types) != want {
			t.Fatalf("run %s's log: %v, want %s", runNo, types, want)
		}
	}
}

// auditLog audits the whole log on nc.
func auditLog(t *testing.T, nc *nats.Conn) engine.AuditReport {
	t.Helper()
	ctx := context.Background()
	js, _ := jetstream.New(nc)
	cons, err := js.OrderedConsumer(ctx, eventlog.StreamName, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := js.Stream(ctx, eventlog.StreamName)
	last := st.CachedInfo().State.LastSeq
	a := engine.NewAudit(nil)
	for seq := uint64(0); seq < last; {
		m, err := cons.Next()
		if err != nil {
			t.Fatal(err)
		}
		md, _ := m.Metadata()
		seq = md.Sequence.Stream
		a.Apply(m.Subject(), seq, m.Data())
	}
	return a.Report()
}
