package ledger

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"
)

// Checkpoints: what the chain cannot show by itself. A chain proves each
// event's predecessor, not that an account's newest events, or a whole
// account, are still there. A checkpoint is a signed statement of where
// the chains stood: for each account, the sequence, hash and balance of
// its newest event at or before the log sequence Through.
//
// The node writes a log checkpoint at an interval, on its own subject:
// the accounts whose chains moved since the one before (whose hash it
// names in Prev, so checkpoints chain too), with the count of accounts
// and the Credits outstanding through Through. An account checkpoint is
// one account's head, signed on request and kept by its owner. Either,
// kept outside the node, shows a log cut below it.

// Checkpoint kinds.
const (
	CheckpointLog     = "log"
	CheckpointAccount = "account"
)

// CheckpointVersion is the schema version of Checkpoint.
const CheckpointVersion = 1

// MaxCheckpointHeads bounds the heads of one log checkpoint (one message,
// well under the log's largest): a busier interval writes several.
const MaxCheckpointHeads = 2000

// Head is where one account's chain stood: its newest event at or before
// a checkpoint's Through.
type Head struct {
	Account string `json:"account_id"`
	Seq     uint64 `json:"seq"`
	Hash    string `json:"hash"`
	Balance int64  `json:"balance"`
}

// Checkpoint is a signed statement of the chains' heads through a log
// sequence.
type Checkpoint struct {
	Kind string    `json:"kind"`
	V    int       `json:"v"`
	At   time.Time `json:"at"`
	// Through: every account event at or before this log sequence is
	// covered.
	Through uint64 `json:"through"`
	// Prev (log checkpoints) is the hash of the checkpoint before, as
	// stored ("" for the first).
	Prev string `json:"prev,omitempty"`
	// Accounts and Outstanding (log checkpoints) are the accounts opened
	// and the sum of their balances, through Through.
	Accounts    int   `json:"accounts"`
	Outstanding int64 `json:"outstanding"`
	// Heads are the accounts whose chains moved since Prev's Through
	// (a log checkpoint), or the one account (an account checkpoint),
	// in account order.
	Heads []Head `json:"heads"`
	Sig   string `json:"sig,omitempty"`
}

// checkpointDomain prefixes the bytes a checkpoint's signature covers, so
// that no signature of one kind of record verifies another.
const checkpointDomain = "apprun ledger checkpoint\n"

// SignCheckpoint returns c signed.
func (s *Signer) SignCheckpoint(c Checkpoint) (Checkpoint, error) {
	msg, err := checkpointSigned(c)
	if err != nil {
		return Checkpoint{}, err
	}
	c.Sig = s.sign(msg)
	return c, nil
}

func checkpointSigned(c Checkpoint) ([]byte, error) {
	c.Sig = ""
	data, err := json.Marshal(c)
	return append([]byte(checkpointDomain), data...), err
}

// VerifyCheckpoint checks c's signature with pub.
func VerifyCheckpoint(pub ed25519.PublicKey, c Checkpoint) error {
	msg, err := checkpointSigned(c)
	return verify(pub, c.Sig, msg, err)
}

// DecodeCheckpoint reads a checkpoint as stored or exported, and refuses
// one that is not.
func DecodeCheckpoint(data []byte) (Checkpoint, error) {
	var c Checkpoint
	if err := json.Unmarshal(data, &c); err != nil {
		return Checkpoint{}, fmt.Errorf("ledger: not a checkpoint: %w", err)
	}
	switch {
	case c.V != CheckpointVersion:
		return Checkpoint{}, fmt.Errorf("ledger: checkpoint version %d, not %d", c.V, CheckpointVersion)
	case c.Kind != CheckpointLog && c.Kind != CheckpointAccount:
		return Checkpoint{}, fmt.Errorf("ledger: checkpoint kind %q, not %q or %q", c.Kind, CheckpointLog, CheckpointAccount)
	case c.Kind == CheckpointAccount && len(c.Heads) != 1:
		return Checkpoint{}, errors.New("ledger: an account checkpoint names one account")
	}
	for _, h := range c.Heads {
		if h.Seq > c.Through || h.Seq == 0 {
			return Checkpoint{}, fmt.Errorf("ledger: checkpoint through %d names %s at sequence %d", c.Through, h.Account, h.Seq)
		}
	}
	return c, nil
}

// NextCheckpoint builds the log checkpoint after prev (the zero
// Checkpoint: none), whose stored bytes hash to prevHash: feed it the
// account events after prev.Through in the log's order.
type NextCheckpoint struct {
	cp    Checkpoint
	heads map[string]Head
}

// NewNextCheckpoint starts the checkpoint after prev.
func NewNextCheckpoint(prev Checkpoint, prevHash string) *NextCheckpoint {
	return &NextCheckpoint{
		cp:    Checkpoint{Kind: CheckpointLog, V: CheckpointVersion, Prev: prevHash, Through: prev.Through, Accounts: prev.Accounts, Outstanding: prev.Outstanding},
		heads: map[string]Head{},
	}
}

// Full reports whether another account would take the checkpoint past
// MaxCheckpointHeads: it ends before that account's event.
func (n *NextCheckpoint) Full(account string) bool {
	_, moved := n.heads[account]
	return !moved && len(n.heads) >= MaxCheckpointHeads
}

// Add takes the next account event: stored at seq as data, e decoded.
func (n *NextCheckpoint) Add(seq uint64, data []byte, e Event) {
	if e.Type == AccountOpened {
		n.cp.Accounts++
	}
	n.cp.Outstanding += e.Amount
	n.heads[e.AccountID] = Head{Account: e.AccountID, Seq: seq, Hash: Hash(data), Balance: e.Balance}
}

// Moved reports whether any account event was added.
func (n *NextCheckpoint) Moved() bool { return len(n.heads) > 0 }

// Done is the checkpoint through the log sequence through, made at at.
func (n *NextCheckpoint) Done(through uint64, at time.Time) Checkpoint {
	cp := n.cp
	cp.Through, cp.At = through, at.UTC()
	cp.Heads = make([]Head, 0, len(n.heads))
	for _, h := range n.heads {
		cp.Heads = append(cp.Heads, h)
	}
	sort.Slice(cp.Heads, func(i, j int) bool { return cp.Heads[i].Account < cp.Heads[j].Account })
	return cp
}
