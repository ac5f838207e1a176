package ledger

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// The chain: every account event names, in Prev, the hash of the event
// before it on its account (the message's bytes as the log stores them;
// "" for the first), and carries in Sig an Ed25519 signature, by the
// ledger's signing key, of its own bytes with Sig empty. An event the log
// holds that no one with the key wrote, an event removed from the middle
// of an account, or one changed after it was written, breaks the chain.

// Hash is the hash an event's successor names: the SHA-256 of the
// message's bytes, in hex.
func Hash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Signer signs account events with the ledger's key.
type Signer struct{ key ed25519.PrivateKey }

// NewSigner is a Signer with key.
func NewSigner(key ed25519.PrivateKey) (*Signer, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("ledger: a signing key is %d bytes, not %d", ed25519.PrivateKeySize, len(key))
	}
	return &Signer{key: key}, nil
}

// PublicKey is the key that verifies the signer's signatures.
func (s *Signer) PublicKey() ed25519.PublicKey { return s.key.Public().(ed25519.PublicKey) }

// Sign returns e signed.
func (s *Signer) Sign(e Event) (Event, error) {
	msg, err := signed(e)
	if err != nil {
		return Event{}, err
	}
	e.Sig = s.sign(msg)
	return e, nil
}

// sign is the signature of msg, base64.
func (s *Signer) sign(msg []byte) string {
	return base64.RawStdEncoding.EncodeToString(ed25519.Sign(s.key, msg))
}

// verify checks sig, base64, on msg with pub; msg's error is a bad
// signature's.
func verify(pub ed25519.PublicKey, sig string, msg []byte, err error) error {
	if sig == "" {
		return ErrUnsigned
	}
	raw, derr := base64.RawStdEncoding.DecodeString(sig)
	if derr != nil || err != nil || !ed25519.Verify(pub, msg, raw) {
		return ErrBadSignature
	}
	return nil
}

// signed is the bytes a signature covers: the event with Sig empty.
func signed(e Event) ([]byte, error) {
	e.Sig = ""
	return json.Marshal(e)
}

// Chain errors.
var (
	ErrUnsigned     = errors.New("ledger: the event is not signed")
	ErrBadSignature = errors.New("ledger: the signature does not verify with the ledger's public key")
	ErrBrokenLink   = errors.New("ledger: the event does not name the hash of the one before it on its account")
)

// Verify checks e's signature with pub, e as decoded from the log.
func Verify(pub ed25519.PublicKey, e Event) error {
	msg, err := signed(e)
	return verify(pub, e.Sig, msg, err)
}

// Chain checks the account events of a log, fed in the log's order: each
// signed with the key, each naming its predecessor. Events written before
// the ledger was signed (the log's first signed event is later) are
// counted, not refused: they are the history before the chain began.
type Chain struct {
	pub   ed25519.PublicKey
	heads map[string]string // account → hash of its newest event
	// Signed is whether a signed event has been seen; Unsigned counts the
	// events before it.
	Signed   bool
	Unsigned int
}

// NewChain checks events against pub.
func NewChain(pub ed25519.PublicKey) *Chain {
	return &Chain{pub: pub, heads: map[string]string{}}
}

// Check takes the next account event of the log: data as stored, e as
// decoded. It returns why the event breaks the chain, if it does.
func (c *Chain) Check(account string, data []byte, e Event) error {
	msg, err := signed(e)
	return c.check(account, data, e.Prev, e.Sig, msg, err)
}

// CheckRecord takes the next signed record of chain (a price's, a key's:
// Record): data as stored, r as decoded.
func (c *Chain) CheckRecord(chain string, data []byte, r Record) error {
	prev, sig := r.Link()
	msg, err := json.Marshal(r.WithSig(""))
	return c.check(chain, data, prev, sig, msg, err)
}

func (c *Chain) check(chain string, data []byte, prev, sig string, msg []byte, msgErr error) error {
	head := c.heads[chain] // "" before the chain's first event
	c.heads[chain] = Hash(data)
	if sig == "" && prev == "" && !c.Signed {
		c.Unsigned++
		return nil
	}
	c.Signed = true
	if err := verify(c.pub, sig, msg, msgErr); err != nil {
		return err
	}
	if prev != head {
		return ErrBrokenLink
	}
	return nil
}

// A Record is a signed message of the log that is no account event: a
// price, a key. It names in prev the hash of the message before it on
// its subject (its writer sets it, as for an account event), and is
// signed like an account event: the signature covers its encoding with
// sig empty. A Record's dynamic type is comparable (==): identical
// records of one write (a price's copies) share one signature.
type Record interface {
	// Link is the record's prev and sig.
	Link() (prev, sig string)
	// WithSig is the record with sig as its signature ("": as signed).
	WithSig(sig string) any
}

// SignRecord returns r signed, as its store writes it.
func (s *Signer) SignRecord(r Record) (any, error) {
	msg, err := json.Marshal(r.WithSig(""))
	if err != nil {
		return nil, err
	}
	return r.WithSig(s.sign(msg)), nil
}
