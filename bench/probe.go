package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service"
)

// probe writes straight to the event log exactly what one run admission
// writes: the count in the key's create window, then the atomic batch of
// the charge, the platform slot, the job and the created event with the
// same compare-and-set checks (engine.AdmissionWrites builds them with
// CreateRun's code). It reads nothing and decides nothing: it writes to
// its own account, slots and runs, so it knows their sequences. The create
// scenario runs probes next to real creates, on a server with the same
// durability, so the ratio between the two is what apprun adds on top of
// the writes it must make.
type probe struct {
	e       *service.Service
	ports   port.Set
	price   engine.Price
	keyID   string
	acct    ledger.Account
	acctSeq uint64
	slot    int
}

// newProbe opens an account with credits for one probe writer of App
// slug. firstSlot is the first platform slot it claims; probes running
// side by side need ranges that do not overlap.
func newProbe(ctx context.Context, e *service.Service, ports port.Set, slug string, credits int64, firstSlot int) (*probe, error) {
	price, err := e.CurrentPrice(ctx, slug)
	if err != nil {
		return nil, err
	}
	if price.Seq == 0 || price.Recalibrating {
		return nil, fmt.Errorf("probe: App %q has no usable price", slug)
	}
	a, err := e.OpenAccount(ctx, "probe@example.com", credits, ledger.By{Actor: "system:bench"})
	if err != nil {
		return nil, err
	}
	acct, seq, err := e.Account(ctx, a.AccountID)
	if err != nil {
		return nil, err
	}
	return &probe{e: e, ports: ports, price: price, keyID: a.KeyID, acct: acct, acctSeq: seq, slot: firstSlot}, nil
}

// admit makes one admission's writes.
func (p *probe) admit(ctx context.Context) error {
	_, _, err := p.admitRun(ctx)
	return err
}

// admitRun makes one admission's writes and returns the run's created
// event and its sequence.
func (p *probe) admitRun(ctx context.Context) (engine.RunEvent, uint64, error) {
	if ok, _, _, err := p.ports.Windows.Hit(ctx, port.WindowCreate, p.keyID); err != nil || !ok {
		return engine.RunEvent{}, 0, fmt.Errorf("probe: create window: ok %v, %v", ok, err)
	}
	created, charge, entries, err := p.e.AdmissionWrites(p.acct, p.acctSeq, p.keyID, p.price, p.slot, time.Now().UTC())
	if err != nil {
		return engine.RunEvent{}, 0, err
	}
	p.slot++
	seq, err := p.ports.Log.Append(ctx, entries...)
	if err != nil {
		p.relearn(ctx)
		return engine.RunEvent{}, 0, err
	}
	// An atomic batch is stored contiguously: the charge is its first
	// message, the created event its last.
	p.acct, p.acctSeq = ledger.Apply(p.acct, charge), seq-uint64(len(entries)-1)
	p.acct.Head = ledger.Hash(entries[0].Data) // the next charge's prev, as a node reads it
	return created, seq, nil
}

// relearn reads the account's state again after a write whose batch may
// have been stored all the same (an answer lost to a cancelled context).
func (p *probe) relearn(ctx context.Context) {
	if acct, seq, err := p.e.Account(context.WithoutCancel(ctx), p.acct.ID); err == nil {
		p.acct, p.acctSeq = acct, seq
	}
}

// run makes every write of one run of steps steps, one after another as
// the executor makes them: the admission, the started event, one event a
// step, and the finish (the settle, the slot's release and the completed
// event with output). It returns the run's run_no and how long each part
// took.
func (p *probe) run(ctx context.Context, steps int, output []byte) (string, runWrites, error) {
	var took runWrites
	t := time.Now()
	created, last, err := p.admitRun(ctx)
	if err != nil {
		return "", took, err
	}
	took.admission, t = time.Since(t), time.Now()
	run := engine.ApplyRun(engine.Run{}, created, last)
	noModel, now := false, time.Now().UTC()
	events := []engine.RunEvent{{Type: engine.RunStarted, RunNo: run.RunNo}, {Type: engine.RunRecorded, RunNo: run.RunNo,
		Recorded: &engine.Recorded{Entry: &engine.RecordEntry{Kind: engine.RecordStart, StartedAt: now, EndedAt: now, WithModel: &noModel}}}}
	for i := 1; i <= steps; i++ {
		events = append(events, engine.RunEvent{Type: engine.ToolRunning, RunNo: run.RunNo, ToolRun: &engine.ToolRun{Step: &engine.Step{Index: i, Total: steps, Tool: "write_email", Message: "Writing"}}})
	}
	for _, ev := range events {
		ev.At = time.Now().UTC()
		w, err := service.RunEventWrite(last, ev)
		if err != nil {
			return run.RunNo, took, err
		}
		if last, err = p.ports.Log.Append(ctx, w); err != nil {
			return run.RunNo, took, err
		}
	}
	took.events, t = time.Since(t), time.Now()
	settle, entries, err := p.e.FinishWrites(run, last, p.acct, p.acctSeq, "3 emails", output, time.Now().UTC())
	if err != nil {
		return run.RunNo, took, err
	}
	seq, err := p.ports.Log.Append(ctx, entries...)
	if err != nil {
		p.relearn(ctx)
		return run.RunNo, took, err
	}
	took.finish = time.Since(t)
	p.acct, p.acctSeq = ledger.Apply(p.acct, settle), seq-uint64(len(entries)-1)
	return run.RunNo, took, nil
}

// runWrites is how long each part of a run's writes took: the admission
// (the create window and the atomic batch), the events one by one
// (started and the steps), and the finish's atomic batch.
type runWrites struct {
	admission, events, finish time.Duration
}
