package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
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
