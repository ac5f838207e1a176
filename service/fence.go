package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service/store"
	"github.com/apprun/apprun/subjects"
)

// An admission whose write went unanswered (a timeout, a lost ack, a
// leader change) may or may not be stored. No answer may hide that: a 201
// must name a run that exists, and a refusal must mean nothing was charged.
// So the node resolves it before it answers, with a fence: a message on the
// run's subject that expects "no message yet". The admission's created
// event expects the same, and the log checks both in one order, so exactly
// one of them is stored:
//   - the fence is stored: the admission can never be; the answer is a
//     definite refusal, nothing charged;
//   - the fence conflicts: something is on the run's subject. If it is the
//     run's created event the admission was stored and the answer is 201;
//     if it is an earlier fence of ours (whose own answer was lost), the
//     refusal stands.

// fenceTimeout bounds how long a request spends resolving an unknown
// outcome before it gives the resolution to the background.
const fenceTimeout = 30 * time.Second

// errNothingCharged is the refusal after a fence won.
var errNothingCharged = fmt.Errorf("%w: the run could not be created and nothing was charged; retry", port.ErrUnavailable)

// resolveAdmission learns whether the admission of run runNo is stored:
// (seq of its created event, true), or (0, false) once it never can be.
// An error (ErrAmbiguous) means it is still unknown: the log is not
// connected, or could not be reached for fenceTimeout.
func (s *Service) resolveAdmission(ctx context.Context, runNo string) (uint64, bool, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fenceTimeout)
	defer cancel()
	fence := engine.RunEvent{Type: engine.RunFenced, V: engine.EventVersion, RunNo: runNo, At: s.now()}
	for attempt := 1; ; attempt++ {
		if !s.ports.Log.Available() {
			// Not connected: nothing can be learnt now. Answer, and let the
			// background resolve it once the log is back (voidLater).
			return 0, false, fmt.Errorf("%w: admission of %s unresolved: the event log is unreachable", port.ErrAmbiguous, runNo)
		}
		_, err := s.log.Append(ctx, store.Entry{Subject: subjects.Run(runNo), Value: fence, Expect: store.ExpectSeq(0)})
		if err == nil {
			return 0, false, nil
		}
		if errors.Is(err, port.ErrConflict) {
			// Something is on the run's subject: read what came first (a
			// read that lags shows nothing yet; then ask again).
			first, ferr := s.firstRunEvent(ctx, runNo)
			if ferr == nil {
				if first.Event.Type == engine.RunCreated {
					return first.Seq, true, nil
				}
				return 0, false, nil // our own earlier fence
			}
			err = ferr
		}
		if ctx.Err() != nil {
			return 0, false, fmt.Errorf("%w: admission of %s unresolved after %s: %w", port.ErrAmbiguous, runNo, fenceTimeout, err)
		}
		s.cfg.Sleep(s.fenceBackoff(attempt))
	}
}

// firstRunEvent is the first message on a run's subject.
func (s *Service) firstRunEvent(ctx context.Context, runNo string) (store.LoggedEvent, error) {
	m, err := s.firstAfter(ctx, subjects.Run(runNo), 0)
	if err != nil {
		return store.LoggedEvent{}, err
	}
	ev, err := engine.DecodeRunEvent(m.Data)
	if err != nil {
		return store.LoggedEvent{}, fmt.Errorf("decode %s@%d: %w", m.Subject, m.Seq, err)
	}
	return store.LoggedEvent{Seq: m.Seq, Event: ev}, nil
}

// voidLater resolves in the background an admission a request could not
// resolve in time, and cancels the run (a refund) if it turns out stored:
// the client was answered 503, which promises nothing was charged. An
// Idempotency-Key the admission wrote (key, or nil) is given back first,
// so a retry with it is judged afresh; until the run is resolved, a retry
// on this node that finds the key naming it is answered
// idempotency_in_progress, not with a run about to be cancelled.
func (s *Service) voidLater(accountID, runNo string, key *idemKey) {
	s.voiding.Store(runNo, true)
	go func() {
		defer s.voiding.Delete(runNo)
		for {
			_, exists, err := s.resolveAdmission(context.Background(), runNo)
			if err != nil {
				s.cfg.Logger.Warn("admission still unresolved; retrying", "run_no", runNo, "err", err)
				select {
				case <-s.stopped:
					// A stop ends the resolution: a run stored after all is
					// then executed and charged like any admitted run (a
					// known gap, docs/guarantees.md "No answer hides an outcome").
					return
				case <-time.After(time.Second):
				}
				continue
			}
			if !exists {
				return
			}
			if key != nil {
				s.giveBack(key, runNo)
			}
			for {
				_, _, err := s.CancelRun(context.Background(), accountID, runNo)
				if err == nil || engine.ErrorCode(err) == engine.CodeRunFinished {
					s.cfg.Logger.Warn("an admission answered 503 was stored after all; its run was cancelled and refunded",
						"run_no", runNo, "err", err)
					return
				}
				select {
				case <-s.stopped:
					return
				case <-time.After(time.Second):
				}
			}
		}
	}()
}

// giveBack releases an Idempotency-Key whose record names runNo, a run
// about to be voided: a retry with the key then makes a run of its own.
// Best effort: a key not given back replays the voided run, cancelled and
// refunded.
func (s *Service) giveBack(key *idemKey, runNo string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rec IdemRecord
	seq, err := s.log.Last(ctx, key.subject, &rec)
	if err != nil || rec.Type != idemCompleted || rec.RunNo != runNo {
		return
	}
	released := IdemRecord{Type: idemReleased, V: engine.EventVersion, At: s.now(), BodyHash: key.bodyHash}
	if _, err := s.log.Append(ctx, store.Entry{Subject: key.subject, Value: released, Expect: store.ExpectSeq(seq), TTL: idemKeep}); err != nil {
		s.cfg.Logger.Warn("an Idempotency-Key of a voided run not given back: a retry with it gets the voided run", "run_no", runNo, "err", err)
	}
}

func (s *Service) fenceBackoff(attempt int) time.Duration {
	d := time.Duration(min(attempt, 10)) * 20 * time.Millisecond
	return d + time.Duration(s.cfg.IntN(int(d)))
}
