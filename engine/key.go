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

// MaxActiveKeys is how many active API keys an account may hold. The
// limits of a key (creates and reads a minute, open streams) would
// otherwise multiply with keys.
const MaxActiveKeys = 10
