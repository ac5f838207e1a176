package service

import (
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service/store"
)

// The writes of a run, exported for `apprun bench`: its probe writes
// them straight to a log, to measure what the service must write next to
// what the service does. Each is built by the service's own code.

// AdmissionWrites is what admitting one run writes, for an account in
// state acct (at sequence acctSeq) at price, built by the same code as
// CreateRun's: the charge, the platform slot (when slot > 0), the job with
// the price check and the created event, each with its compare-and-set
// check. It returns the created event, the charge and the entries encoded
// for the Log port. It decides nothing else: `apprun bench` writes these
// straight to a log (package bench's probe) to measure the writes a create
// must make, next to real creates.
func (s *Service) AdmissionWrites(acct ledger.Account, acctSeq uint64, keyID string, price engine.Price, slot int, at time.Time) (engine.RunEvent, ledger.Event, []port.Entry, error) {
	created := engine.RunEvent{Type: engine.RunCreated, V: engine.EventVersion, RunNo: s.newRunNo(), At: at, Created: &engine.Created{
		AccountID: acct.ID, KeyID: keyID, AppSlug: price.Slug, Input: []byte(`{}`), CreditCost: price.CreditCost, Slot: slot}}
	charge, err := ledger.Charge(acct, created.RunNo, price.Slug, price.CreditCost, 0, at)
	if err != nil {
		return engine.RunEvent{}, ledger.Event{}, nil, err
	}
	out, err := s.log.Encode(admission(created, charge, acctSeq, 0, store.CheckedPrice{Price: price}, nil))
	return created, charge, out, err
}

// RunEventWrite is the write the executor makes for each event of a
// running run (started, a step): ev on the log of its run (ev.RunNo),
// compare-and-set on that log's last sequence, encoded for the Log port.
// With FinishWrites it is how `apprun bench` writes a whole run straight
// to a log, to measure the writes a run must make next to real runs.
func RunEventWrite(last uint64, ev engine.RunEvent) (port.Entry, error) {
	out, err := store.Encode([]store.Entry{runEventWrite(last, ev)})
	if err != nil {
		return port.Entry{}, err
	}
	return out[0], nil
}

// FinishWrites is the executor's atomic write that completes run (its log
// at sequence last) with summary and output, for an account in state acct
// at acctSeq: the settle, the slot's release and the completed event, each
// with its compare-and-set check. It returns the settle and the entries
// encoded for the Log port.
func (s *Service) FinishWrites(run engine.Run, last uint64, acct ledger.Account, acctSeq uint64, summary string, output []byte, at time.Time) (ledger.Event, []port.Entry, error) {
	settle, err := ledger.Settle(acct, run.RunNo, run.AppSlug, at)
	if err != nil {
		return ledger.Event{}, nil, err
	}
	term := engine.RunEvent{Type: engine.RunCompleted, V: engine.EventVersion, RunNo: run.RunNo, At: at,
		Completed: &engine.Completed{Summary: summary, Output: output}}
	out, err := s.log.Encode(finishWrite(run, last, settle, acctSeq, term, s.hookKeep()))
	return settle, out, err
}
