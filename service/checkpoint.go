package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service/store"
	"github.com/apprun/apprun/subjects"
)

// errNoSigner: checkpoints are signed statements; a node without the
// ledger's signing key writes none.
var errNoSigner = errors.New("the ledger has no signing key: checkpoints are signed")

// errCheckpointFull ends a read of the log at the account that would
// take a checkpoint past its bound.
var errCheckpointFull = errors.New("checkpoint full")

// Checkpoint writes the log's next checkpoint when account events came
// after the newest (ledger/checkpoint.go), and returns the newest as
// stored: what `apprun ledger checkpoint` prints and `apprun audit
// --checkpoint` takes. Several nodes may try at once; the log keeps one
// chain (compare-and-set on the checkpoints' subject), and whoever loses
// reads the winner's.
func (s *Service) Checkpoint(ctx context.Context) ([]byte, error) {
	if s.cfg.Signer == nil {
		return nil, engine.Errorf(engine.CodeInternal, "%v", errNoSigner)
	}
	for range s.casTries() {
		last, err := s.ports.Log.Last(ctx, subjects.Checkpoint)
		if err != nil && !errors.Is(err, port.ErrNoMessage) {
			return nil, internal("read the newest checkpoint", err)
		}
		var prev ledger.Checkpoint
		prevHash := ""
		if last.Seq > 0 {
			if prev, err = ledger.DecodeCheckpoint(last.Data); err != nil {
				return nil, internal("read the newest checkpoint", err)
			}
			prevHash = ledger.Hash(last.Data)
		}
		// The checkpoint goes through the last account event read: a read
		// sees the log's messages up to some sequence, every one of them
		// (a replica behind the leader sees fewer, never with holes), so
		// every account event up to the last read is covered. Those after
		// it are the next checkpoint's.
		next := ledger.NewNextCheckpoint(prev, prevHash)
		through, full := prev.Through, false
		err = s.ports.Log.Read(ctx, subjects.AccountPrefix+"*", prev.Through, func(m port.Message) error {
			var ev ledger.Event
			if err := store.DecodeMessage(m, &ev); err != nil {
				return err
			}
			if next.Full(ev.AccountID) {
				full = true
				return errCheckpointFull
			}
			next.Add(m.Seq, m.Data, ev)
			through = m.Seq
			return nil
		})
		if err != nil && !errors.Is(err, errCheckpointFull) {
			return nil, internal("read the account events", err)
		}
		if !next.Moved() {
			if last.Seq == 0 {
				return nil, engine.Errorf(engine.CodeNotFound, "no checkpoint: the ledger holds no account event yet")
			}
			return last.Data, nil
		}
		entries, err := s.log.Encode([]store.Entry{{Subject: subjects.Checkpoint, Value: next.Done(through, s.now()), Expect: store.ExpectSeq(last.Seq)}})
		if err != nil {
			return nil, internal("sign the checkpoint", err)
		}
		switch _, err := s.log.AppendEncoded(ctx, entries); {
		case err == nil:
			if full {
				continue // a busy interval: the rest in the next checkpoint
			}
			return entries[0].Data, nil
		case errors.Is(err, port.ErrConflict):
			continue // another node wrote one: checkpoint after it
		case store.IsAmbiguous(err):
			continue // stored or not, the next try reads which
		default:
			return nil, internal("write the checkpoint", err)
		}
	}
	return nil, engine.Errorf(engine.CodeInternal, "checkpoint busy; retry")
}

// AccountCheckpoint is an account's own checkpoint: its newest event's
// sequence, hash and balance, signed now. Its owner keeps it; `apprun
// audit --checkpoint` proves the log still holds that event.
func (s *Service) AccountCheckpoint(ctx context.Context, accountID string) ([]byte, error) {
	if s.cfg.Signer == nil {
		return nil, engine.Errorf(engine.CodeInternal, "%v", errNoSigner)
	}
	acct, seq, err := s.log.Account(ctx, accountID, false)
	if err != nil {
		return nil, err
	}
	cp := ledger.Checkpoint{Kind: ledger.CheckpointAccount, V: ledger.CheckpointVersion, At: s.now(), Through: seq,
		Heads: []ledger.Head{{Account: accountID, Seq: seq, Hash: acct.Head, Balance: acct.Balance}}}
	signed, err := s.cfg.Signer.SignCheckpoint(cp) // never written: its owner keeps it
	if err == nil {
		var data []byte
		if data, err = json.Marshal(signed); err == nil {
			return data, nil
		}
	}
	return nil, internal("sign the account checkpoint", err)
}

// checkpointNow writes a checkpoint in the background, logging a failure.
func (s *Service) checkpointNow() {
	if s.cfg.Signer == nil {
		return
	}
	if _, err := s.Checkpoint(context.Background()); err != nil && engine.ErrorCode(err) != engine.CodeNotFound {
		s.cfg.Logger.Warn("ledger checkpoint failed; will retry", "err", fmt.Sprint(err))
	}
}
