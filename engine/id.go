package engine

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"io"
	"strings"
)

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newID returns prefix followed by n random bytes in lowercase base32: a
// valid single NATS subject token.
func newID(prefix string, n int) string { return readID(rand.Reader, prefix, n) }

// id is newID from the engine's entropy (crypto/rand unless the
// simulation seeds it).
func (e *Engine) id(prefix string, n int) string { return readID(e.cfg.Entropy, prefix, n) }

func readID(r io.Reader, prefix string, n int) string {
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		panic("engine: reading entropy failed: " + err.Error())
	}
	return prefix + idEncoding.EncodeToString(b)
}

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
func HashKey(apiKey string) string {
	sum := sha256.Sum256([]byte(apiKey))
	return hex.EncodeToString(sum[:])
}
