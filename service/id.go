package service

import (
	"crypto/rand"
	"encoding/base32"
	"io"
	"time"

	"github.com/apprun/apprun/engine"
)

// id is NewID from the service's entropy (crypto/rand unless the
// simulation seeds it).
func (e *Service) id(prefix string, n int) string { return idFrom(e.cfg.Entropy, prefix, n) }

// newRunNo is a run number made now from the service's entropy.
func (e *Service) newRunNo() string { return runNoFrom(e.cfg.Entropy, e.now()) }

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewID returns prefix followed by n random bytes in lowercase base32: a
// valid single NATS subject token.
func NewID(prefix string, n int) string { return idFrom(rand.Reader, prefix, n) }

// idFrom is NewID with its random bytes read from r.
func idFrom(r io.Reader, prefix string, n int) string {
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		panic("service: reading entropy failed: " + err.Error())
	}
	return prefix + idEncoding.EncodeToString(b)
}

// sortedEncoding is base32 over idEncoding's characters in byte order:
// encoded numbers of one length sort as the numbers do.
var sortedEncoding = base32.NewEncoding("234567abcdefghijklmnopqrstuvwxyz").WithPadding(base32.NoPadding)

// runNoFrom is a run number made at at: "run_", then 26 characters that
// encode the time in milliseconds (48 bits) and 80 random bits, in an
// order-preserving base32. Run numbers therefore sort by creation time
// (to the millisecond; random within one), as ULIDs do. Stores keyed by
// them, the read models' runs in bbolt above all, append at their end
// instead of writing into random pages: a rebuild of a log with random
// run numbers ran at a median of 146k events/s against 181k with these
// (BENCHMARKS.md, tenth pass). The characters are those ValidID
// always accepted: run numbers made before stay valid.
func runNoFrom(r io.Reader, at time.Time) string {
	var b [16]byte
	ms := uint64(max(at.UnixMilli(), 0))
	for i := range 6 {
		b[i] = byte(ms >> (8 * (5 - i)))
	}
	if _, err := io.ReadFull(r, b[6:]); err != nil {
		panic("service: reading entropy failed: " + err.Error())
	}
	return engine.PrefixRun + sortedEncoding.EncodeToString(b[:])
}

// RunNoAt is a run number as the service makes them, at at: for tools that
// write logs shaped like the service's (apprun bench).
func RunNoAt(at time.Time) string { return runNoFrom(rand.Reader, at) }
