package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service/store"
)

// An append whose answer was lost (ErrAmbiguous: a timeout, a dropped
// acknowledgement, a leader change) may or may not be stored, and no
// answer may hide which: a grant answered "safe to retry" and stored all
// the same was granted twice by its retry. appendResolved learns the
// outcome before it returns, by sending the very same entries again until
// the log answers. Their checks make the two sends one write: the second
// is stored only if the first was not, and when it fails a check, the
// first entry (the witness) says whose write came first. The message just
// after its expected sequence is either ours (stored once, by the first
// send) or another's, and then ours never can be (its check fails for
// good): ErrConflict, on which the caller decides again from the log, as
// after any failed check.
//
// So the first entry must carry a check on its own subject, and its data
// must be this append's alone: a new subject's first message (a random
// id), or a state stamped with the time to the nanosecond that no other
// writer of the subject writes from the same state at the same instant.
// Admissions resolve their own with a fence (fence.go). An outcome still
// unknown after fenceTimeout, or while the log is unreachable, is
// errUnresolved.
func (s *Service) appendResolved(ctx context.Context, entries ...store.Entry) (uint64, error) {
	if len(entries) == 0 || entries[0].Expect == nil || entries[0].ExpectSubject != "" {
		return 0, fmt.Errorf("appendResolved: the first entry carries no check on its own subject")
	}
	out, err := s.log.Encode(entries)
	if err != nil {
		return 0, err
	}
	seq, err := s.log.AppendEncoded(ctx, out)
	if !store.IsAmbiguous(err) {
		return seq, err
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fenceTimeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		if !s.ports.Log.Available() {
			return 0, fmt.Errorf("%w: %w", errUnresolved, err)
		}
		seq, err = s.log.AppendEncoded(rctx, out)
		if errors.Is(err, port.ErrConflict) {
			var first port.Message
			first, err = s.firstAfter(rctx, out[0].Subject, *out[0].Expect)
			switch {
			case err == nil && bytes.Equal(first.Data, out[0].Data):
				return first.Seq + uint64(len(out)-1), nil // ours, stored by an earlier send
			case err == nil:
				return 0, port.ErrConflict // another's came first: ours never can be
			}
		}
		if !store.IsAmbiguous(err) && !errors.Is(err, port.ErrUnavailable) {
			return seq, err
		}
		if rctx.Err() != nil {
			return 0, fmt.Errorf("%w after %s: %w", errUnresolved, fenceTimeout, err)
		}
		s.cfg.Sleep(s.fenceBackoff(attempt))
	}
}

// errUnresolved: a write whose outcome could not be learnt. It may be
// stored; the answer must say so, never "nothing was done".
var errUnresolved = fmt.Errorf("%w: the write's outcome could not be learnt", port.ErrAmbiguous)

// errFound stops a read at its first message.
var errFound = errors.New("found")

// firstAfter is the first message on subject after sequence after.
func (s *Service) firstAfter(ctx context.Context, subject string, after uint64) (port.Message, error) {
	var first port.Message
	err := s.ports.Log.Read(ctx, subject, after, func(m port.Message) error {
		first = m
		return errFound
	})
	switch {
	case errors.Is(err, errFound):
		return first, nil
	case err != nil:
		return port.Message{}, err
	}
	return port.Message{}, fmt.Errorf("%w: no message on %s after %d yet", port.ErrUnavailable, subject, after)
}

// unresolved is the answer to a write whose outcome is unknown (what says
// what it was, advice what to do): a 500 that says so, never "safe to
// retry".
func unresolved(what, advice string) error {
	return engine.Errorf(engine.CodeInternal, "%s may or may not have been made: the event log did not answer in time; %s", what, advice)
}
