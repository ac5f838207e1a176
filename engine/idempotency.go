package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"
)

// Idempotency-Key windows.
const (
	// IdempotencyWindow is how long a key replays its first answer.
	IdempotencyWindow = 24 * time.Hour
	// idemClaimTTL is how long a claim by a request still in progress blocks
	// others; a claim older than this was left by a crash and is taken over.
	idemClaimTTL = 10 * time.Second
	// idemKeep is how long an Idempotency-Key record stays in the log (a
	// per-message TTL): its window, and an hour for clocks that differ.
	idemKeep = IdempotencyWindow + time.Hour
	// MaxIdempotencyKey bounds a key's length.
	MaxIdempotencyKey = 255
)

// Idempotency record types.
const (
	idemClaimed   = "idempotency_claimed"
	idemCompleted = "idempotency_completed"
	idemReleased  = "idempotency_released"
)

// IdemRecord is one entry of an Idempotency-Key's log. The completed record
// is written in the same atomic batch as the run it created.
type IdemRecord struct {
	Type       string    `json:"type"`
	V          int       `json:"v"`
	At         time.Time `json:"at"`
	BodyHash   string    `json:"body_hash"`
	RunNo      string    `json:"run_no,omitempty"`
	CreditCost int64     `json:"credit_cost,omitempty"`
}

// idemClaim is a key this request holds while it creates its run.
type idemClaim struct {
	subject  string
	seq      uint64
	bodyHash string
}

func idemSubject(accountID, key string) string {
	sum := sha256.Sum256([]byte(key))
	return subjIdem + accountID + "." + hex.EncodeToString(sum[:16])
}

// ValidIdempotencyKey reports whether k may be used as an Idempotency-Key:
// 1 to 255 printable ASCII characters.
func ValidIdempotencyKey(k string) bool {
	if k == "" || len(k) > MaxIdempotencyKey {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// claimIdempotency either returns the run a key already created (replay),
// or claims the key for this request. The claim is a compare-and-set on
// the key's subject, so of concurrent requests one claims and the others
// are told the first is still in progress.
func (e *Engine) claimIdempotency(ctx context.Context, accountID, key, bodyHash string) (*idemClaim, *CreatedRun, error) {
	subj := idemSubject(accountID, key)
	for range e.casTries() {
		var rec IdemRecord
		seq, err := e.log.last(ctx, subj, &rec)
		if err != nil && !errors.Is(err, ErrNoMessage) {
			return nil, nil, internal("read idempotency key", err)
		}
		now := e.now()
		live := err == nil && now.Sub(rec.At) < IdempotencyWindow
		if live && rec.Type != idemReleased {
			if rec.BodyHash != bodyHash {
				return nil, nil, Errorf(CodeIdempotencyReused, "this Idempotency-Key was used with a different request body in the last 24 hours; use a new key for a new request")
			}
			if rec.Type == idemCompleted {
				return nil, &CreatedRun{RunNo: rec.RunNo, CreditCost: rec.CreditCost, Replayed: true}, nil
			}
			if now.Sub(rec.At) < idemClaimTTL {
				return nil, nil, &Error{Code: CodeIdempotencyBusy, RetryAfter: time.Second,
					Message: "a request with this Idempotency-Key is still being processed; retry shortly to get its answer"}
			}
		}
		claim := IdemRecord{Type: idemClaimed, V: eventVersion, At: now, BodyHash: bodyHash}
		newSeq, err := e.log.append(ctx, entry{subject: subj, value: claim, expect: expectSeq(seq), ttl: idemKeep})
		if errors.Is(err, ErrConflict) {
			continue // another request claimed it first: read what it wrote
		}
		if err != nil {
			return nil, nil, internal("claim idempotency key", err)
		}
		return &idemClaim{subject: subj, seq: newSeq, bodyHash: bodyHash}, nil, nil
	}
	return nil, nil, Errorf(CodeIdempotencyBusy, "this Idempotency-Key is contended; retry shortly")
}

// release gives a claimed key back after the request failed, so a retry
// with the same key is evaluated afresh. Best effort: a claim that is not
// released expires after idemClaimTTL.
func (e *Engine) release(ctx context.Context, c *idemClaim) {
	rec := IdemRecord{Type: idemReleased, V: eventVersion, At: e.now(), BodyHash: c.bodyHash}
	_, _ = e.log.append(ctx, entry{subject: c.subject, value: rec, expect: expectSeq(c.seq), ttl: idemKeep})
}

// completed is the record written with the run in the admission batch.
func (c *idemClaim) completed(run RunEvent) entry {
	return entry{subject: c.subject, expect: expectSeq(c.seq), ttl: idemKeep, value: IdemRecord{Type: idemCompleted, V: eventVersion,
		At: run.At, BodyHash: c.bodyHash, RunNo: run.RunNo, CreditCost: run.CreditCost}}
}
