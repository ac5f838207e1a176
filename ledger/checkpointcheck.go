package ledger

import (
	"bytes"
	"cmp"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
)

// Checkpoints checks a log against checkpoints: the ones the log holds,
// read before the log itself (Expect), and any kept outside it
// (ExpectExported). Each head a checkpoint names must be the event the
// log holds at its sequence; at each checkpoint's Through, the log's
// fold must give its count of accounts and Credits outstanding; the log's
// checkpoints must be signed and chained; and an exported log checkpoint
// must be in the log. Feed it the log in order: Event for each account
// event, Logged for each checkpoint, Reached as the log moves on; then
// End.
type Checkpoints struct {
	pub ed25519.PublicKey
	// pending are the heads not yet met, by sequence.
	pending map[uint64]expectedHead
	// due are the log checkpoints whose totals are still to check, by
	// Through.
	due []Checkpoint
	// exported are exported log checkpoints, as stored, not yet met.
	exported [][]byte
	// The log's fold: accounts opened and the sum of balances.
	accounts    int
	outstanding int64
	prevLogged  string // hash of the last checkpoint met in the log
	// logged are the log's checkpoints Expect verified, by sequence,
	// so that Logged does not verify them again.
	logged   map[uint64]loggedCheckpoint
	findings []string
}

type loggedCheckpoint struct {
	hash, prev string
	err        error // why it is no checkpoint signed by the key (found once)
}

type expectedHead struct {
	Head
	by string // the checkpoint that names it, for the finding
}

// NewCheckpoints checks checkpoints signed by pub's key.
func NewCheckpoints(pub ed25519.PublicKey) *Checkpoints {
	return &Checkpoints{pub: pub, pending: map[uint64]expectedHead{}, logged: map[uint64]loggedCheckpoint{}}
}

// verified is data decoded, or why it is no checkpoint signed by the key.
func (c *Checkpoints) verified(data []byte) (Checkpoint, error) {
	cp, err := DecodeCheckpoint(data)
	if err == nil {
		err = VerifyCheckpoint(c.pub, cp)
	}
	return cp, err
}

// Expect takes a checkpoint the log holds at seq.
func (c *Checkpoints) Expect(seq uint64, data []byte) {
	cp, err := c.verified(data)
	c.logged[seq] = loggedCheckpoint{hash: Hash(data), prev: cp.Prev, err: err}
	if err != nil {
		c.finding("the checkpoint at sequence %d: %v", seq, err)
		return
	}
	c.expect(cp, fmt.Sprintf("the checkpoint at sequence %d", seq))
}

// ExpectExported takes a checkpoint kept outside the log: a log
// checkpoint must also be in it. It returns why data is no checkpoint
// signed by the key.
func (c *Checkpoints) ExpectExported(data []byte) error {
	var compact bytes.Buffer
	if err := json.Compact(&compact, data); err == nil {
		data = compact.Bytes() // as the log stores it: no newline, no indent
	}
	cp, err := c.verified(data)
	if err != nil {
		return fmt.Errorf("the exported checkpoint: %w", err)
	}
	if cp.Kind == CheckpointLog {
		c.exported = append(c.exported, bytes.Clone(data))
	}
	c.expect(cp, fmt.Sprintf("the exported %s checkpoint through %d (%s)", cp.Kind, cp.Through, cp.At.Format("2006-01-02T15:04:05Z")))
	return nil
}

// expect takes the heads of a verified checkpoint, and a log
// checkpoint's totals, in Through's order (the log's come in it already).
func (c *Checkpoints) expect(cp Checkpoint, by string) {
	for _, h := range cp.Heads {
		c.pending[h.Seq] = expectedHead{Head: h, by: by}
	}
	if cp.Kind == CheckpointLog {
		at, _ := slices.BinarySearchFunc(c.due, cp.Through+1, func(d Checkpoint, t uint64) int { return cmp.Compare(d.Through, t) })
		c.due = slices.Insert(c.due, at, cp)
	}
}

func (c *Checkpoints) finding(format string, args ...any) {
	c.findings = append(c.findings, fmt.Sprintf(format, args...))
}

// Event takes the account event the log holds at seq: stored as data, e
// decoded.
func (c *Checkpoints) Event(seq uint64, data []byte, e Event) {
	if e.Type == AccountOpened {
		c.accounts++
	}
	c.outstanding += e.Amount
	want, ok := c.pending[seq]
	if !ok {
		return
	}
	delete(c.pending, seq)
	switch {
	case e.AccountID != want.Account:
		c.finding("%s names account %s's event at sequence %d; the log holds account %s's there", want.by, want.Account, seq, e.AccountID)
	case Hash(data) != want.Hash:
		c.finding("%s names account %s's event at sequence %d with hash %s; the log's (%s) hashes to %s: changed after the checkpoint",
			want.by, want.Account, seq, want.Hash, e.Type, Hash(data))
	case e.Balance != want.Balance:
		c.finding("%s gives account %s a balance of %d at sequence %d; the log's event gives %d", want.by, want.Account, want.Balance, seq, e.Balance)
	}
}

// Logged takes the checkpoint the log holds at seq: it must be signed
// and name the one before it.
func (c *Checkpoints) Logged(seq uint64, data []byte) {
	prev, hash := c.prevLogged, Hash(data)
	c.prevLogged = hash
	c.exported = slices.DeleteFunc(c.exported, func(d []byte) bool { return bytes.Equal(d, data) })
	known, ok := c.logged[seq]
	delete(c.logged, seq)
	if !ok || known.hash != hash { // not read before the log (or not these bytes)
		cp, err := c.verified(data)
		known = loggedCheckpoint{hash: hash, prev: cp.Prev, err: err}
		if err != nil {
			c.finding("the checkpoint at sequence %d: %v", seq, err)
		}
	}
	if known.err == nil && known.prev != prev {
		c.finding("the checkpoint at sequence %d does not name the hash of the checkpoint before it: a checkpoint was removed or added", seq)
	}
}

// Reached says every message of the log through seq has been fed: the
// checkpoints through it are checked.
func (c *Checkpoints) Reached(seq uint64) {
	for len(c.due) > 0 && c.due[0].Through <= seq {
		cp := c.due[0]
		c.due = c.due[1:]
		for _, h := range cp.Heads {
			if want, still := c.pending[h.Seq]; still {
				delete(c.pending, h.Seq)
				c.finding("%s names account %s's event at sequence %d (hash %s, balance %d); the log does not hold it: erased",
					want.by, h.Account, h.Seq, h.Hash, h.Balance)
			}
		}
		if cp.Accounts != c.accounts || cp.Outstanding != c.outstanding {
			c.finding("the checkpoint through %d signed %d accounts and %d Credits outstanding; the log through it gives %d and %d",
				cp.Through, cp.Accounts, cp.Outstanding, c.accounts, c.outstanding)
		}
	}
}

// End says the log ends at last, and returns every finding: heads it
// never held, checkpoints past its end, exported checkpoints it lacks.
func (c *Checkpoints) End(last uint64) []string {
	c.Reached(last)
	for _, cp := range c.due {
		c.finding("a checkpoint covers the log through sequence %d, but the log ends at %d: its tail was cut", cp.Through, last)
	}
	c.due = nil
	seqs := make([]uint64, 0, len(c.pending))
	for seq := range c.pending {
		seqs = append(seqs, seq)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	for _, seq := range seqs {
		want := c.pending[seq]
		c.finding("%s names account %s's event at sequence %d (hash %s); the log does not hold it: erased or cut", want.by, want.Account, seq, want.Hash)
	}
	c.pending = map[uint64]expectedHead{}
	for _, data := range c.exported {
		cp, _ := DecodeCheckpoint(data)
		c.finding("the exported checkpoint through %d (%s) is not in the log: the log was cut below it or rewritten", cp.Through, cp.At.Format("2006-01-02T15:04:05Z"))
	}
	c.exported = nil
	return c.findings
}
