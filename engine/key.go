package engine

import (
	"time"
)

// Key is an API key as the read models hold it.
type Key struct {
	KeyID      string    `json:"key_id"`
	AccountID  string    `json:"account_id"`
	Prefix     string    `json:"prefix"`
	Name       string    `json:"name,omitempty"`
	Revoked    bool      `json:"revoked"`
	CreatedAt  time.Time `json:"created_at"`
	LastUsedAt time.Time `json:"last_used_at"`
	RevokedAt  time.Time `json:"revoked_at"`
}

// MaxKeyName is the longest name a key may have.
const MaxKeyName = 100

// NewKey is a created API key: shown once, stored only as its hash.
type NewKey struct {
	KeyID  string
	APIKey string
	Seq    uint64
}

// MaxActiveKeys is how many active API keys an account may hold. The
// limits of a key (creates and reads a minute, open streams) would
// otherwise multiply with keys.
const MaxActiveKeys = 10

// KeyUseEvery is how often a key's use is recorded in the log, on all
// nodes together: a key's last-used time is kept to the minute.
const KeyUseEvery = time.Minute

// SessionKeyID is what a website session's requests count against in
// place of an API key (rate limits, open streams): one per account, never
// a real key.
func SessionKeyID(accountID string) string { return "web_" + accountID }
