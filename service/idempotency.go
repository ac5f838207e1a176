package service

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/port"
	"github.com/apprun/apprun/service/store"
	"github.com/apprun/apprun/subjects"
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

// Idempotency record types. A key's record is written only with its
// run, in the admission's one atomic batch (completed), or to fence off an
// admission whose outcome could not be learnt (released). A refused
// request writes nothing: its key stays as it was. Claims are written no
// more; one left by an earlier version is honoured until it expires.
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

// idemKey is where a request's Idempotency-Key stood when it was read:
// the admission's batch writes the completed record only if it still
// stands there (compare-and-set on seq), so of two requests with one key
// one creates the run and the other finds it.
type idemKey struct {
	subject  string
	seq      uint64
	bodyHash string
}

func idemSubject(accountID, key string) string {
	sum := sha256.Sum256([]byte(key))
	return subjects.IdemPrefix + accountID + "." + hex.EncodeToString(sum[:16])
}

// requestHash identifies a create's request for its Idempotency-Key: the
// request's fields in canonical JSON (sorted keys), so formatting and
// member order do not make it "different", and every surface (API,
// website, MCP) has it made the same way, here.
func requestHash(r CreateRunRequest) string {
	body := map[string]any{"app_slug": r.AppSlug, "input": r.Input, "brand_context_id": r.BrandContextID,
		"max_credit_cost": r.MaxCreditCost, "webhook_url": r.WebhookURL}
	if r.Model != "" || r.RerunOf != "" { // only then: keys stored before keep their hash
		body["model"], body["rerun_of"] = r.Model, r.RerunOf
	}
	data, _ := json.Marshal(body)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
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

// readIdempotency reads a key without writing: the run it already created
// (replay), a refusal (another request body, or a claim of an earlier
// version still in progress), or where the key stands for this request's
// admission.
func (s *Service) readIdempotency(ctx context.Context, accountID, key, bodyHash string) (*idemKey, *CreatedRun, error) {
	k := &idemKey{subject: idemSubject(accountID, key), bodyHash: bodyHash}
	var rec IdemRecord
	seq, err := s.log.Last(ctx, k.subject, &rec)
	if errors.Is(err, port.ErrNoMessage) {
		return k, nil, nil
	}
	if err != nil {
		return nil, nil, internal("read idempotency key", err)
	}
	k.seq = seq
	replay, err := k.judge(rec, s.now())
	if replay != nil {
		if _, voiding := s.voiding.Load(replay.RunNo); voiding {
			return nil, nil, &engine.Error{Code: engine.CodeIdempotencyBusy, RetryAfter: time.Second,
				Message: "the first request with this Idempotency-Key is still being resolved; retry shortly to get its answer"}
		}
	}
	return k, replay, err
}

// judge says what the key's newest record means for this request.
func (k *idemKey) judge(rec IdemRecord, now time.Time) (*CreatedRun, error) {
	if now.Sub(rec.At) >= IdempotencyWindow || rec.Type == idemReleased {
		return nil, nil // free: this request may use it
	}
	if rec.BodyHash != k.bodyHash {
		return nil, engine.Errorf(engine.CodeIdempotencyReused, "this Idempotency-Key was used with a different request body in the last 24 hours; use a new key for a new request")
	}
	switch {
	case rec.Type == idemCompleted:
		return &CreatedRun{RunNo: rec.RunNo, CreditCost: rec.CreditCost, Replayed: true}, nil
	case rec.Type == idemClaimed && now.Sub(rec.At) < idemClaimTTL:
		return nil, &engine.Error{Code: engine.CodeIdempotencyBusy, RetryAfter: time.Second,
			Message: "a request with this Idempotency-Key is still being processed; retry shortly to get its answer"}
	}
	return nil, nil
}

// moved reads the key again after this request's admission was refused
// or lost a compare-and-set: when another request with the key created
// its run meanwhile, that run is this request's answer (replay). Else
// the key's new position, if it moved, is taken for the next attempt.
func (s *Service) moved(ctx context.Context, k *idemKey) (*CreatedRun, error) {
	var rec IdemRecord
	seq, err := s.log.Last(ctx, k.subject, &rec)
	if errors.Is(err, port.ErrNoMessage) || (err == nil && seq == k.seq) {
		return nil, nil
	}
	if err != nil {
		return nil, internal("read idempotency key", err)
	}
	k.seq = seq
	return k.judge(rec, s.now())
}

// fence makes sure an admission whose outcome could not be learnt can
// never be stored later: a released record where the key stood. If the
// admission was stored, the key has moved, the write conflicts, and a
// retry with the key finds the run. It reports whether the fence (or the
// run) now stands.
func (s *Service) fence(ctx context.Context, k *idemKey) bool {
	rec := IdemRecord{Type: idemReleased, V: engine.EventVersion, At: s.now(), BodyHash: k.bodyHash}
	_, err := s.log.Append(ctx, store.Entry{Subject: k.subject, Value: rec, Expect: store.ExpectSeq(k.seq), TTL: idemKeep})
	return err == nil || errors.Is(err, port.ErrConflict)
}

// completed is the record written with the run in the admission batch.
func (k *idemKey) completed(run engine.RunEvent) store.Entry {
	return store.Entry{Subject: k.subject, Expect: store.ExpectSeq(k.seq), TTL: idemKeep, Value: IdemRecord{Type: idemCompleted, V: engine.EventVersion,
		At: run.At, BodyHash: k.bodyHash, RunNo: run.RunNo, CreditCost: run.Created.CreditCost}}
}
