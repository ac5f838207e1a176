package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
)

// An append whose answer was lost (ErrAmbiguous: a timeout, a dropped
// acknowledgement, a leader change) may or may not be stored, and no
// answer may hide which: a grant answered "safe to retry" and stored all
// the same was granted twice by its retry. appendResolved learns the
// outcome before it returns, by sending the very same entries again until
// the log answers. Their checks make the two sends one write: the second
// is stored only if the first was not, and when it fails a check, the
// witness entry's subject says whose write came first. The message just
// after the witness's expected sequence is either ours (stored once, by
// the first send) or another's, and then ours never can be (its check
// fails for good): ErrConflict, on which the caller decides again from
// the log, as after any failed check.
//
// It is for appends of entries that all carry a check (admissions resolve
// their own with a fence, fence.go). An outcome still unknown after
// fenceTimeout, or while the log is unreachable, is errUnresolved.
func (e *Engine) appendResolved(ctx context.Context, entries ...entry) (uint64, error) {
	w := witness(entries)
	if w < 0 {
		return 0, fmt.Errorf("appendResolved: no entry carries a check")
	}
	out, err := encode(entries)
	if err != nil {
		return 0, err
	}
	seq, err := e.log.appendEncoded(ctx, out)
	if !isAmbiguous(err) {
		return seq, err
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fenceTimeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		if !e.ports.Log.Available() {
			return 0, fmt.Errorf("%w: %w", errUnresolved, err)
		}
		seq, err = e.log.appendEncoded(rctx, out)
		if errors.Is(err, ErrConflict) {
			var first Message
			first, err = e.firstAfter(rctx, out[w].Subject, *out[w].Expect)
			switch {
			case err == nil && bytes.Equal(first.Data, out[w].Data):
				return first.Seq + uint64(len(out)-1-w), nil // ours, stored by an earlier send
			case err == nil:
				return 0, ErrConflict // another's came first: ours never can be
			}
		}
		if !isAmbiguous(err) && !errors.Is(err, ErrUnavailable) {
			return seq, err
		}
		if rctx.Err() != nil {
			return 0, fmt.Errorf("%w after %s: %w", errUnresolved, fenceTimeout, err)
		}
		e.cfg.Sleep(e.fenceBackoff(attempt))
	}
}

// errUnresolved: a write whose outcome could not be learnt. It may be
// stored; the answer must say so, never "nothing was done".
var errUnresolved = fmt.Errorf("%w: the write's outcome could not be learnt", ErrAmbiguous)

// witness is the entry whose subject tells whether an append was stored:
// one that expects no message yet (a new subject, which only this append
// writes), else the first that carries a check; -1 when none does.
func witness(entries []entry) int {
	first := -1
	for i, en := range entries {
		switch {
		case en.expect == nil || en.expectSubject != "":
		case *en.expect == 0:
			return i
		case first < 0:
			first = i
		}
	}
	return first
}

// errFound stops a read at its first message.
var errFound = errors.New("found")

// firstAfter is the first message on subject after sequence after.
func (e *Engine) firstAfter(ctx context.Context, subject string, after uint64) (Message, error) {
	var first Message
	err := e.ports.Log.Read(ctx, subject, after, func(m Message) error {
		first = m
		return errFound
	})
	switch {
	case errors.Is(err, errFound):
		return first, nil
	case err != nil:
		return Message{}, err
	}
	return Message{}, fmt.Errorf("%w: no message on %s after %d yet", ErrUnavailable, subject, after)
}

// unresolved is the answer to a write whose outcome is unknown (what says
// what it was, advice what to do): a 500 that says so, never "safe to
// retry".
func unresolved(what, advice string) error {
	return Errorf(CodeInternal, "%s may or may not have been made: the event log did not answer in time; %s", what, advice)
}
