package engine

import (
	"time"

	"github.com/apprun/apprun/ledger"
)

// AdmissionWrites is what admitting one run writes, for an account in
// state acct (at sequence acctSeq) at price, built by the same code as
// CreateRun's: the charge, the platform slot (when slot > 0), the job with
// the price check and the created event, each with its compare-and-set
// check. It returns the run_no, the charge and the entries encoded for the
// Log port. It decides nothing else: `apprun bench` writes these straight
// to a log (package bench's probe) to measure the writes a create must
// make, next to real creates.
func (e *Engine) AdmissionWrites(acct ledger.Account, acctSeq uint64, keyID string, price Price, slot int, at time.Time) (string, ledger.Event, []Entry, error) {
	created := RunEvent{Type: RunCreated, V: eventVersion, RunNo: e.id(PrefixRun, 10), AccountID: acct.ID,
		KeyID: keyID, AppSlug: price.Slug, Input: []byte(`{}`), CreditCost: price.CreditCost, At: at, Slot: slot}
	charge, err := ledger.Charge(acct, created.RunNo, price.CreditCost, 0, at)
	if err != nil {
		return "", ledger.Event{}, nil, err
	}
	out, err := encode(admission(created, charge, acctSeq, 0, price, nil))
	return created.RunNo, charge, out, err
}
