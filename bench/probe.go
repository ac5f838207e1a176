package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
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
	e       *engine.Engine
	ports   engine.Ports
	price   engine.Price
	keyID   string
	acct    ledger.Account
	acctSeq uint64
	slot    int
}

// newProbe opens an account with credits for one probe writer of App
// slug. firstSlot is the first platform slot it claims; probes running
// side by side need ranges that do not overlap.
func newProbe(ctx context.Context, e *engine.Engine, ports engine.Ports, slug string, credits int64, firstSlot int) (*probe, error) {
	price, err := e.CurrentPrice(ctx, slug)
	if err != nil {
		return nil, err
	}
	if price.Seq == 0 || price.Recalibrating {
		return nil, fmt.Errorf("probe: App %q has no usable price", slug)
	}
	a, err := e.OpenAccount(ctx, "probe@example.com", credits)
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
	if ok, _, _, err := p.ports.Windows.Hit(ctx, engine.WindowCreate, p.keyID); err != nil || !ok {
		return fmt.Errorf("probe: create window: ok %v, %v", ok, err)
	}
	_, charge, entries, err := p.e.AdmissionWrites(p.acct, p.acctSeq, p.keyID, p.price, p.slot, time.Now().UTC())
	if err != nil {
		return err
	}
	p.slot++
	seq, err := p.ports.Log.Append(ctx, entries...)
	if err != nil {
		// The batch may have been stored all the same (an answer lost to a
		// cancelled context): learn the account's state again.
		if acct, seq, rerr := p.e.Account(context.WithoutCancel(ctx), p.acct.ID); rerr == nil {
			p.acct, p.acctSeq = acct, seq
		}
		return err
	}
	// An atomic batch is stored contiguously: the charge is its first message.
	p.acct, p.acctSeq = ledger.Apply(p.acct, charge), seq-uint64(len(entries)-1)
	return nil
}
