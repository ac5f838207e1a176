package bench

import (
	"context"
	"testing"

	"github.com/apprun/apprun/apps"
	"github.com/apprun/apprun/embednats/natstest"
	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/eventlog"
	"github.com/nats-io/nats.go/jetstream"
)

// The probe writes what an admission writes: after its admissions the log
// audits as that many runs created and charged, with no violation (a
// charge without its run, a run without its slot…).
func TestProbeWritesWhatAnAdmissionWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nc := natstest.Connect(t, false)
	e, ports, err := preparedEngine(ctx, nc, engine.Limits{CreatePerMinute: 1000, PlatformActiveRuns: 1000}, 1, apps.TestSleep())
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
	js, _ := jetstream.New(nc)
	cons, err := js.OrderedConsumer(ctx, eventlog.StreamName, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := js.Stream(ctx, eventlog.StreamName)
	last := st.CachedInfo().State.LastSeq
	a := engine.NewAudit()
	for seq := uint64(0); seq < last; {
		m, err := cons.Next()
		if err != nil {
			t.Fatal(err)
		}
		md, _ := m.Metadata()
		seq = md.Sequence.Stream
		a.Apply(m.Subject(), seq, m.Data())
	}
	rep := a.Report()
	if len(rep.Runs) != 5 || rep.Active != 5 || rep.Charged != 5*p.price.CreditCost || len(rep.Violations) > 0 {
		t.Fatalf("after 5 probe admissions: %d runs (%d active), charged %d at price %d, violations %v",
			len(rep.Runs), rep.Active, rep.Charged, p.price.CreditCost, rep.Violations)
	}
}
