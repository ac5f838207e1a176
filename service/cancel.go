package service

import (
	"context"
	"errors"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
)

// CancelRun ends an account's queued or running run with a failed event
// whose error code is canceled, refunding its charge and releasing its slot, in one atomic write
// with compare-and-set on the run's log: if the run ended first the write
// fails and the answer is run_already_finished; once this write is stored
// no completion can follow it. Cancelling a canceled run answers it again.
func (s *Service) CancelRun(ctx context.Context, accountID, runNo string) (engine.Run, uint64, error) {
	if !engine.ValidID(engine.PrefixRun, runNo) {
		return engine.Run{}, 0, engine.Errorf(engine.CodeRunNotFound, "no run %q", runNo)
	}
	// Paced tries (casTries): a check fails while another node's write on
	// the run (its executor's) is being replicated.
	for range s.casTries() {
		// The account first: a completion that lands after this read moves
		// it, so the batch's check on it fails and the loop looks again
		// (read after the run, a settle in between would leave no active
		// run to refund).
		acct, acctSeq, err := s.Account(ctx, accountID)
		if err != nil {
			return engine.Run{}, 0, err
		}
		events, err := s.log.RunLog(ctx, runNo, 0)
		if err != nil {
			return engine.Run{}, 0, internal("read run", err)
		}
		if len(events) == 0 || events[0].Event.Type != engine.RunCreated || events[0].Event.Created.AccountID != accountID {
			return engine.Run{}, 0, engine.Errorf(engine.CodeRunNotFound, "no run %q", runNo)
		}
		var run engine.Run
		var last uint64
		for _, le := range events {
			run, last = engine.ApplyRun(run, le.Event, le.Seq), le.Seq
		}
		switch {
		case run.Canceled():
			return run, last, nil
		case run.Terminal():
			return run, last, engine.Errorf(engine.CodeRunFinished, "run %s has already %s; there is nothing to cancel", runNo, run.Status)
		}
		at := s.now()
		refund, err := ledger.Refund(acct, runNo, run.AppSlug, run.CreditCost, at)
		if err != nil {
			continue // the account moved since it was read: look again
		}
		term := engine.RunEvent{Type: engine.RunFailed, V: engine.EventVersion, RunNo: runNo, At: at,
			Failed: &engine.Failed{Error: engine.CanceledError(), Refunded: run.CreditCost}}
		seq, err := s.log.Append(ctx, finishWrite(run, last, refund, acctSeq, term, s.hookKeep())...)
		if errors.Is(err, port.ErrConflict) {
			continue // the run or the account moved: look again
		}
		if err != nil {
			return engine.Run{}, 0, internal("cancel run", err)
		}
		s.counters.ended(false, run.CreditCost)
		return engine.ApplyRun(run, term, seq), seq, nil
	}
	return engine.Run{}, 0, engine.Errorf(engine.CodeInternal, "run busy; retry the cancel")
}
