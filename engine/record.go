package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"
)

// ErrNotRecorded: a replay asked for a model call or a source read its
// record does not hold (the App now makes a call it did not make then).
var ErrNotRecorded = errors.New("the record holds no such call")

// A run's record is what its log holds beyond the streamed events, so that
// a reviewer can see what the run did and replay it without the model or
// the network: the created event's input (validated, defaults filled in),
// App version and price, then one recorded event per step as it ends — a
// model exchange (messages as sent, raw reply, usage) or a source read
// (URL asked and reached, status, bytes, hash, content). recorded events
// are not streamed and change no state; they never hold a credential.

// RunRecorded is a run's record entry: written while the run runs, before
// its terminal event, and never streamed.
const RunRecorded RunEventType = "recorded"

// Recorded is the recorded event's kind: one entry.
type Recorded struct {
	Entry *RecordEntry `json:"record,omitempty"`
}

// Record entry kinds.
const (
	// RecordStart opens a run's execution: which steps it takes (with or
	// without a model) and the brand context it used, as it was.
	RecordStart = "start"
	// RecordModel is one model exchange.
	RecordModel = "model"
	// RecordSource is one read of a source (a page, a feed, an API).
	RecordSource = "source"
)

// RecordEntry is one entry of a run's record. Kind says which fields are
// set. Content that passes the record's bound is cut, with Truncated set
// and its full length and hash kept: such an entry cannot be replayed.
type RecordEntry struct {
	Kind string `json:"kind"`
	// Step is the definition's step name; Call counts the entries of its
	// kind in the run, from 1 (what a replay serves in order).
	Step      string    `json:"step,omitempty"`
	Call      int       `json:"call,omitempty"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`

	// start
	WithModel    *bool         `json:"with_model,omitempty"`
	BrandContext *BrandContext `json:"brand_context,omitempty"`

	// model
	Provider string          `json:"provider,omitempty"`
	Model    string          `json:"model,omitempty"`
	Params   *ModelParams    `json:"params,omitempty"`
	Messages []RecordMessage `json:"messages,omitempty"`
	Reply    *string         `json:"reply,omitempty"`
	Usage    *TokenUsage     `json:"usage,omitempty"`

	// source
	URL         string `json:"url,omitempty"`
	FinalURL    string `json:"final_url,omitempty"`
	Status      int    `json:"status,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	// Bytes is a source's length, or a model reply's, whole.
	Bytes   int64  `json:"bytes,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
	Content string `json:"content,omitempty"`
	// Base64 is set when Content is the body base64-encoded (not UTF-8).
	Base64 bool `json:"base64,omitempty"`

	// Truncated: the entry's content passed the record's bound and was cut.
	Truncated bool `json:"truncated,omitempty"`
	// Error is how the call failed, as the run saw it (code and message).
	Error *RunError `json:"error,omitempty"`
}

// ModelParams are a model call's parameters: the temperature its step
// asks for (not sent when TemperatureNotSent: the provider takes none),
// the JSON mode and the output's schema name.
type ModelParams struct {
	Temperature        *float64 `json:"temperature,omitempty"`
	TemperatureNotSent bool     `json:"temperature_not_sent,omitempty"`
	JSONMode           string   `json:"json_mode,omitempty"`
	SchemaName         string   `json:"schema_name,omitempty"`
}

// RecordMessage is one chat message as sent.
type RecordMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// TokenUsage is a model call's token count, as the provider reported it.
type TokenUsage struct {
	Prompt     int64 `json:"prompt_tokens"`
	Completion int64 `json:"completion_tokens"`
	Total      int64 `json:"total_tokens"`
}

// RecordHead is the part of a run's record known when it is charged: its
// run, App and App version, input and price. Its hash is on the charge's
// ledger line, so an exported record matches its charge after the run is
// gone.
type RecordHead struct {
	RunNo      string          `json:"run_no"`
	AppSlug    string          `json:"app_slug"`
	AppVersion string          `json:"app_version"`
	Input      json.RawMessage `json:"input"`
	CreditCost int64           `json:"credit_cost"`
}

// Hash is the head's SHA-256 over its JSON (fields in this order, input
// as stored), "sha256:" and hex.
func (h RecordHead) Hash() string {
	b, _ := json.Marshal(h)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// HeadOf is the record head of a run's created event.
func HeadOf(runNo string, c *Created) RecordHead {
	return RecordHead{RunNo: runNo, AppSlug: c.AppSlug, AppVersion: c.AppVersion, Input: c.Input, CreditCost: c.CreditCost}
}
