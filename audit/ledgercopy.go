package audit

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apprun/apprun/eventlog"
	"github.com/apprun/apprun/port"
	"github.com/nats-io/nats.go/jetstream"
)

// ledgerCopy is the ledger stream's copy of the log's account events,
// checkpoints and prices (eventlog.LedgerStreamName), which refuses
// deletes and purges: each copied message by its sequence in the log.
// The replay checks every such message of the log against it (see), and
// what is left unseen was removed from the log (left).
type ledgerCopy struct {
	msgs map[uint64]copied
	// newest is the newest log sequence copied: the copy follows the log
	// a little behind, so a message past it is not missing from it.
	newest uint64
	kept   int
	found  []string
}

type copied struct {
	subject string
	sum     [32]byte
}

// readLedgerCopy reads the ledger stream's copy of the log through last;
// nil when there is no ledger stream (a log written before it was).
func readLedgerCopy(ctx context.Context, js jetstream.JetStream, last uint64) (*ledgerCopy, error) {
	// In a cluster, a stream's information and its messages may be
	// unanswered for a moment (a member that stopped, an election): read
	// again, as the log's replay does, until no progress for auditStall.
	var st jetstream.Stream
	sctx, cancel := context.WithTimeout(ctx, auditStall)
	defer cancel()
	err := port.Retry(sctx, nil, "read the ledger stream", func(ctx context.Context) (err error) {
		st, err = js.Stream(ctx, eventlog.LedgerStreamName)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			st, err = nil, nil
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the ledger stream: %w", err)
	}
	if st == nil {
		return nil, nil
	}
	lc := &ledgerCopy{msgs: map[uint64]copied{}, found: changedConfig(st.CachedInfo())}
	end := st.CachedInfo().State.LastSeq
	var read uint64
	progress := time.Now()
	for read < end {
		if time.Since(progress) > auditStall {
			return nil, fmt.Errorf("read the ledger stream: no progress for %s at sequence %d of %d", auditStall, read, end)
		}
		n, err := fetchFrom(ctx, st, "", read+1, end, func(seq uint64, m jetstream.Msg) {
			read = seq
			src, ok := sourceSeq(m.Headers().Get("Nats-Stream-Source"))
			if !ok {
				lc.found = append(lc.found, fmt.Sprintf("ledger stream message %d on %s does not name its place in the log", seq, m.Subject()))
				return
			}
			if src > last {
				return // past what this audit replays
			}
			lc.msgs[src] = copied{m.Subject(), sha256.Sum256(m.Data())}
			lc.newest = max(lc.newest, src)
			lc.kept++
		})
		switch {
		case n > 0:
			progress = time.Now()
		case err != nil && ctx.Err() != nil:
			return nil, fmt.Errorf("read the ledger stream: %w", err)
		case err == nil:
			return lc, nil // nothing more within the wait
		}
		if err != nil {
			time.Sleep(200 * time.Millisecond)
		}
	}
	return lc, nil
}

// changedConfig reports what makes the ledger stream keep less than all
// it copied: its configuration may be updated by whoever holds the log's
// credentials (a node must, to follow a change of replicas), and an
// update could set limits that drop messages, lift rollups, or stop the
// copy. The deny flags themselves cannot be lifted.
func changedConfig(info *jetstream.StreamInfo) []string {
	c, st := info.Config, info.State
	var out []string
	say := func(format string, args ...any) {
		out = append(out, "the ledger stream "+fmt.Sprintf(format, args...)+": it may have lost what it copied")
	}
	if !c.DenyDelete || !c.DenyPurge || c.AllowRollup {
		say("allows deletes, purges or rollups (deny_delete %v, deny_purge %v, allow_rollup %v)", c.DenyDelete, c.DenyPurge, c.AllowRollup)
	}
	if c.MaxMsgs > 0 || c.MaxBytes > 0 || c.MaxAge > 0 || c.MaxMsgsPerSubject > 0 {
		say("has limits (max_msgs %d, max_bytes %d, max_age %s, max_msgs_per_subject %d)", c.MaxMsgs, c.MaxBytes, c.MaxAge, c.MaxMsgsPerSubject)
	}
	if len(c.Sources) != 1 || c.Sources[0].Name != eventlog.StreamName {
		say("no longer copies the event log alone (%d sources)", len(c.Sources))
	}
	if st.Msgs > 0 && st.FirstSeq != 1 {
		say("starts at sequence %d, not 1", st.FirstSeq)
	}
	return out
}

// sourceSeq is the log sequence a copied message's Nats-Stream-Source
// header names: "APPRUN <seq> …".
func sourceSeq(h string) (uint64, bool) {
	f := strings.Fields(h)
	if len(f) < 2 || f[0] != eventlog.StreamName {
		return 0, false
	}
	seq, err := strconv.ParseUint(f[1], 10, 64)
	return seq, err == nil
}

// see checks a message of the log the ledger stream keeps a copy of.
// The message's kind is decoded only to name it in a finding.
func (lc *ledgerCopy) see(seq uint64, subject string, data []byte) {
	c, ok := lc.msgs[seq]
	switch {
	case !ok && seq <= lc.newest:
		lc.found = append(lc.found, fmt.Sprintf("event %d on %s (%s) is not in the ledger stream's copy of the log, whose copy is past it: "+
			"the copy lost it, or it was written into the log's store afterwards", seq, subject, eventType(data)))
	case !ok:
	case c.subject != subject || c.sum != sha256.Sum256(data):
		lc.found = append(lc.found, fmt.Sprintf("event %d on %s (%s) differs from the ledger stream's copy of it, on %s: changed after it was written", seq, subject, eventType(data), c.subject))
	}
	delete(lc.msgs, seq)
}

// left reports what the ledger stream keeps that the log no longer has:
// removed from the log (a deleted message, a purged subject).
func (lc *ledgerCopy) left() []string {
	out := lc.found
	for _, seq := range slices.Sorted(maps.Keys(lc.msgs)) {
		out = append(out, fmt.Sprintf("event %d on %s was removed from the log; the ledger stream keeps it", seq, lc.msgs[seq].subject))
	}
	return out
}
