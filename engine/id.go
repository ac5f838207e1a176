package engine

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"io"
	"strings"
	"time"
)

// ValidID reports whether s could be an id apprun issued with prefix: used
// before s becomes part of a subject.
func ValidID(prefix, s string) bool {
	if !strings.HasPrefix(s, prefix) || len(s) <= len(prefix) || len(s) > 64 {
		return false
	}
	for _, c := range s[len(prefix):] {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// ID prefixes.
const (
	PrefixAccount = "acct_"
	PrefixKey     = "key_"
	PrefixRun     = "run_"
	PrefixBrand   = "bc_"
	PrefixAPIKey  = "ak_"
)

// HashKey is the stored form of an API key.
// It is computed on every authenticated request, so it allocates once,
// for the string it returns.
func HashKey(apiKey string) string {
	sum := sha256.Sum256([]byte(apiKey))
	var hexed [2 * sha256.Size]byte
	hex.Encode(hexed[:], sum[:])
	return string(hexed[:])
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewID returns prefix followed by n random bytes read from r (crypto/rand
// in production), in lowercase base32: an id ValidID accepts, and a valid
// single NATS subject token.
func NewID(r io.Reader, prefix string, n int) string {
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		panic("engine: reading entropy failed: " + err.Error())
	}
	return prefix + idEncoding.EncodeToString(b)
}

// sortedEncoding is base32 over idEncoding's characters in byte order:
// encoded numbers of one length sort as the numbers do.
var sortedEncoding = base32.NewEncoding("234567abcdefghijklmnopqrstuvwxyz").WithPadding(base32.NoPadding)

// NewRunNo is a run number made at at, its random bits read from r: "run_", then 26 characters that
// encode the time in milliseconds (48 bits) and 80 random bits, in an
// order-preserving base32. Run numbers therefore sort by creation time
// (to the millisecond; random within one), as ULIDs do. Stores keyed by
// them, the read models' runs in bbolt above all, append at their end
// instead of writing into random pages: a rebuild of a log with random
// run numbers ran at a median of 146k events/s against 181k with these
// (BENCHMARKS.md, tenth pass). The characters are those ValidID
// always accepted: run numbers made before stay valid.
func NewRunNo(r io.Reader, at time.Time) string {
	var b [16]byte
	ms := uint64(max(at.UnixMilli(), 0))
	for i := range 6 {
		b[i] = byte(ms >> (8 * (5 - i)))
	}
	if _, err := io.ReadFull(r, b[6:]); err != nil {
		panic("engine: reading entropy failed: " + err.Error())
	}
	return PrefixRun + sortedEncoding.EncodeToString(b[:])
}
