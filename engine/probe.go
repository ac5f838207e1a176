package engine

import (
	"context"

	"github.com/apprun/apprun/ledger"
)

// Probe writes straight to the event log exactly what one run admission
// writes: the count in the key's create window, then the atomic batch of
// the charge, the platform slot, the job and the created event with the
// same compare-and-set checks (built by the same code as CreateRun's). It
// reads nothing and decides nothing: it writes to its own account, slots
// and runs, so it knows their sequences. `apprun bench` runs probes next to
// real creates, on a server with the same durability, so the ratio between
// the two is what apprun adds on top of the writes it must make.
type Probe struct {
	e       *Engine
	price   Price
	keyID   string
	acct    ledger.Account
	acctSeq uint64
	slot    int
}

// NewProbe opens an account with credits for one probe writer of App slug.
// firstSlot is the first platform slot it claims; probes running side by
// side need ranges that do not overlap.
func (e *Engine) NewProbe(ctx context.Context, slug string, credits int64, firstSlot int) (*Probe, error) {
	price, err := e.CurrentPrice(ctx, slug)
	if err != nil {
		return nil, err
	}
	if err := priceReady(price); err != nil {
		return nil, err
	}
	a, err := e.OpenAccount(ctx, "probe@example.com", credits)
	if err != nil {
		return nil, err
	}
	acct, seq, err := e.Account(ctx, a.AccountID)
	if err != nil {
		return nil, err
	}
	return &Probe{e: e, price: price, keyID: a.KeyID, acct: acct, acctSeq: seq, slot: firstSlot}, nil
}

// Admit makes one admission's writes.
func (p *Probe) Admit(ctx context.Context) error {
	if _, err := p.e.allow(ctx, limitCreate, p.keyID); err != nil {
		return err
	}
	created := RunEvent{Type: RunCreated, V: eventVersion, RunNo: p.e.id(PrefixRun, 10), AccountID: p.acct.ID,
		KeyID: p.keyID, AppSlug: p.price.Slug, Input: []byte(`{}`), CreditCost: p.price.CreditCost, At: p.e.now()}
	if p.e.cfg.Limits.PlatformActiveRuns > 0 {
		created.Slot = p.slot
		p.slot++
	}
	charge, err := ledger.Charge(p.acct, created.RunNo, p.price.CreditCost, 0, created.At)
	if err != nil {
		return err
	}
	entries := admission(created, charge, p.acctSeq, 0, p.price, nil)
	seq, err := p.e.log.append(ctx, entries...)
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
