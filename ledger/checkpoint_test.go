package ledger_test

import (
	"crypto/ed25519"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/ledger"
)

// msg is one message of a made-up log.
type msg struct {
	seq  uint64
	data []byte
	ev   *ledger.Event // nil: a checkpoint
}

// checkpointLog is a log of two accounts' events, with a checkpoint
// written after the first four events and another at the end, as the node
// writes them.
func checkpointLog(t *testing.T, s *ledger.Signer) []msg {
	t.Helper()
	at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	var log []msg
	heads := map[string]string{}
	balances := map[string]int64{}
	event := func(acct string, typ ledger.EventType, amount int64) {
		balances[acct] += amount
		e, err := s.Sign(ledger.Event{Type: typ, V: ledger.Version, At: at, AccountID: acct, Amount: amount, Balance: balances[acct], Prev: heads[acct]})
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(e)
		heads[acct] = ledger.Hash(data)
		log = append(log, msg{seq: uint64(len(log) + 1), data: data, ev: &e})
	}
	var prev ledger.Checkpoint
	prevHash := ""
	checkpoint := func() {
		next := ledger.NewNextCheckpoint(prev, prevHash)
		for _, m := range log {
			if m.ev != nil && m.seq > prev.Through {
				next.Add(m.seq, m.data, *m.ev)
			}
		}
		cp, err := s.SignCheckpoint(next.Done(uint64(len(log)), at))
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(cp)
		log = append(log, msg{seq: uint64(len(log) + 1), data: data})
		prev, prevHash = cp, ledger.Hash(data)
	}
	event("acct_a", ledger.AccountOpened, 100)
	event("acct_b", ledger.AccountOpened, 50)
	event("acct_a", ledger.RunCharged, -10)
	event("acct_b", ledger.CreditsGranted, 5)
	checkpoint()
	event("acct_a", ledger.RunRefunded, 10)
	event("acct_a", ledger.CreditsGranted, 7)
	checkpoint()
	return log
}

// checkCheckpoints feeds log to a Checkpoints as the audit does, and returns its
// findings.
func checkCheckpoints(pub ed25519.PublicKey, log []msg, exported ...[]byte) []string {
	c := ledger.NewCheckpoints(pub)
	var findings []string
	for _, data := range exported {
		if err := c.ExpectExported(data); err != nil {
			findings = append(findings, err.Error())
		}
	}
	for _, m := range log {
		if m.ev == nil {
			c.Expect(m.seq, m.data)
		}
	}
	last := uint64(0)
	for _, m := range log {
		c.Reached(m.seq - 1)
		if m.ev != nil {
			c.Event(m.seq, m.data, *m.ev)
		} else {
			c.Logged(m.seq, m.data)
		}
		last = max(last, m.seq)
	}
	return append(findings, c.End(last)...)
}

func without(log []msg, seqs ...uint64) []msg {
	return slices.DeleteFunc(slices.Clone(log), func(m msg) bool { return slices.Contains(seqs, m.seq) })
}

func TestCheckpointsFindWhatTheChainCannot(t *testing.T) {
	t.Parallel()
	s, pub := signer(t)
	log := checkpointLog(t, s)
	// seq 1 a opened, 2 b opened, 3 a charged, 4 b granted, 5 checkpoint,
	// 6 a refunded, 7 a granted, 8 checkpoint.
	cp1 := decodeCheckpoint(t, log[4].data)
	if cp1.Through != 4 || cp1.Accounts != 2 || cp1.Outstanding != 145 || len(cp1.Heads) != 2 || cp1.Heads[0].Seq != 3 || cp1.Heads[1].Seq != 4 {
		t.Fatalf("the first checkpoint: %+v", cp1)
	}
	cp2 := decodeCheckpoint(t, log[7].data)
	if cp2.Through != 7 || cp2.Accounts != 2 || cp2.Outstanding != 162 || len(cp2.Heads) != 1 || cp2.Heads[0].Account != "acct_a" {
		t.Fatalf("the second checkpoint names only what moved: %+v", cp2)
	}
	if f := checkCheckpoints(pub, log, log[7].data); len(f) != 0 {
		t.Fatalf("the untampered log: %v", f)
	}
	account := ledger.NewNextCheckpoint(ledger.Checkpoint{}, "")
	account.Add(7, log[6].data, *log[6].ev)
	own := account.Done(7, time.Now())
	own.Kind = ledger.CheckpointAccount
	own, _ = s.SignCheckpoint(own)
	ownData, _ := json.Marshal(own)

	for _, c := range []struct {
		name     string
		log      []msg
		exported [][]byte
		want     string
	}{
		{"an account erased whole", without(log, 2, 4), nil, "names account acct_b's event at sequence 4"},
		{"an account's newest events erased", without(log, 6, 7), nil, "names account acct_a's event at sequence 7"},
		{"the tail cut below an exported checkpoint", log[:5], [][]byte{log[7].data}, "the exported checkpoint through 7"},
		{"the tail cut below an account's checkpoint", log[:5], [][]byte{ownData}, "names account acct_a's event at sequence 7"},
		{"a checkpoint removed from the middle", without(log, 5), nil, "does not name the hash of the checkpoint before it"},
		{"an event changed after its checkpoint", changed(log, 4), nil, "changed after the checkpoint"},
		{"a checkpoint not signed by the key", forged(t, log, 7), nil, "the checkpoint at sequence 8: ledger: the signature does not verify"},
		{"an exported checkpoint not signed by the key", log, [][]byte{[]byte(strings.Replace(string(log[7].data), `"through":7`, `"through":9`, 1))}, "the exported checkpoint: ledger: the signature does not verify"},
	} {
		if f := checkCheckpoints(pub, c.log, c.exported...); !strings.Contains(strings.Join(f, "\n"), c.want) {
			t.Errorf("%s: findings %q, want one with %q", c.name, f, c.want)
		}
	}
}

func changed(log []msg, seq uint64) []msg {
	out := slices.Clone(log)
	m := out[seq-1]
	e := *m.ev
	e.At = e.At.Add(time.Second)
	m.data, _ = json.Marshal(e)
	m.ev = &e
	out[seq-1] = m
	return out
}

func forged(t *testing.T, log []msg, i int) []msg {
	other, _ := signer(t)
	cp := decodeCheckpoint(t, log[i].data)
	cp, _ = other.SignCheckpoint(cp)
	out := slices.Clone(log)
	out[i].data, _ = json.Marshal(cp)
	return out
}

func decodeCheckpoint(t *testing.T, data []byte) ledger.Checkpoint {
	t.Helper()
	cp, err := ledger.DecodeCheckpoint(data)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}
