package engine

import (
	"encoding/json"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// RunEventType names what happened to a run, in the past tense where it can.
type RunEventType string

// Run event types. created is the first message of every run log and is not
// streamed; the other four are the spec's event kinds.
const (
	RunCreated   RunEventType = "created"
	RunStarted   RunEventType = "started"
	ToolRunning  RunEventType = "tool_running"
	RunCompleted RunEventType = "completed"
	RunFailed    RunEventType = "failed"
	// runCanceled is how apprun before 2026-11 ended a canceled run. It is
	// never written now (a cancel is a failed event with the error code
	// canceled, so the stream keeps the spec's four kinds); DecodeRunEvent
	// reads an old one as that failed event.
	runCanceled RunEventType = "canceled"
	// RunFenced is not a run event: a node that could not learn whether
	// its admission was stored writes it on the run's subject, expecting
	// no message yet, so that the admission never can be (fence.go). A
	// subject that starts with it holds no run; nothing streams or
	// projects it.
	RunFenced RunEventType = "admission_fenced"
)

// Terminal reports whether t ends a run.
func (t RunEventType) Terminal() bool { return t == RunCompleted || t == RunFailed }

// EventVersion is the schema version of every event apprun writes.
const EventVersion = 1

// RunEvent is one entry of a run's log: what every kind carries (its
// Type, the schema version, when, the run), and the kind's own fields, in
// the kind's own type. One of the kinds is set, as Type says (started and
// admission_fenced carry nothing of their own). On the log the kind's
// fields sit beside the common ones, in one flat JSON object.
type RunEvent struct {
	Type  RunEventType `json:"type"`
	V     int          `json:"v"`
	At    time.Time    `json:"at"`
	RunNo string       `json:"run_no"`

	*Created
	*ToolRun
	*Completed
	*Failed
	*Recorded
}

// Created is the first event of every run: its admission. It is not
// streamed.
type Created struct {
	AccountID      string          `json:"account_id,omitempty"`
	KeyID          string          `json:"key_id,omitempty"`
	AppSlug        string          `json:"app_slug,omitempty"`
	Input          json.RawMessage `json:"input,omitempty"`
	BrandContextID string          `json:"brand_context_id,omitempty"`
	WebhookURL     string          `json:"webhook_url,omitempty"`
	// WebhookEndpoints are the account's endpoints when the run was made.
	WebhookEndpoints []string `json:"webhook_endpoints,omitempty"`
	CreditCost       int64    `json:"credit_cost,omitempty"`
	Slot             int      `json:"slot,omitempty"`
	// AppVersion is the App definition's content hash when the run was
	// made (its record's head, record.go).
	AppVersion string `json:"app_version,omitempty"`
	// Model is the model the run asked for instead of the node's (a rerun
	// with another model); empty: the node's.
	Model string `json:"model,omitempty"`
	// RerunOf is the run this one reruns, and RerunChanges what it
	// changed ("model", "input.<member>").
	RerunOf      string   `json:"rerun_of,omitempty"`
	RerunChanges []string `json:"rerun_changes,omitempty"`
}

// ToolRun is a step of a running run (tool_running).
type ToolRun struct {
	Step *Step `json:"step,omitempty"`
}

// Completed ends a run with its result.
type Completed struct {
	Summary string          `json:"summary,omitempty"`
	Output  json.RawMessage `json:"output,omitempty"`
}

// Failed ends a run with why, and the Credits refunded.
type Failed struct {
	Error    *RunError `json:"error,omitempty"`
	Refunded int64     `json:"refunded,omitempty"`
}

// Tools a model step reports besides its own name: a reply sent back to
// the model to be corrected, and a wait before another try of a call.
const (
	ToolRepairReply     = "repair_reply"
	ToolWaitingForModel = "waiting_for_model"
)

// Step describes one step of a run while it executes.
type Step struct {
	Index   int    `json:"index"`
	Total   int    `json:"total"`
	Tool    string `json:"tool"`
	Message string `json:"message"`
}

// RunError says why a run failed: its code, and in Message what
// happened in words a customer reads. Details, when set, is the technical
// account (a provider's own message, a parser's) for whoever debugs it.
type RunError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Details string `json:"details,omitempty"`
}

func (e *RunError) Error() string { return e.Code + ": " + e.Message }

// Sentence is the message as a sentence for a person: its first letter
// upper case, a full stop at its end.
func (e *RunError) Sentence() string {
	msg := strings.TrimSpace(e.Message)
	if r, size := utf8.DecodeRuneInString(msg); size > 0 && unicode.IsLower(r) {
		msg = string(unicode.ToUpper(r)) + msg[size:]
	}
	if msg != "" && !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	return msg
}

// Run failure codes. Every failed run is refunded.
const (
	FailTimeout     = "timeout"
	FailExecution   = "execution_failed"
	FailInterrupted = "interrupted"
	// FailModelUnavailable: the model provider kept failing (429, 5xx,
	// unreachable) until the attempts or the run's timeout ran out.
	FailModelUnavailable = "model_unavailable"
	// FailModelRejected: the model provider refused the request (a wrong
	// key, an unknown model).
	FailModelRejected = "model_rejected"
	// FailModelReply: the model's reply was not the JSON the App needs.
	FailModelReply = "model_reply_invalid"
	// FailSourceUnavailable: a tool step could not fetch what the run is
	// about (oss-growth: the repository).
	FailSourceUnavailable = "source_unavailable"
	// FailCanceled: the run's owner canceled it.
	FailCanceled = "canceled"
)

// CanceledError is the error of every canceled run.
func CanceledError() *RunError {
	return &RunError{Code: FailCanceled, Message: "the run was canceled by its owner"}
}

// DecodeRunEvent decodes one message of a run's log. A canceled event of
// an older apprun comes back as the failed event a cancel writes now, so
// every reader (fold, stream, webhook, audit, projection) sees one shape.
func DecodeRunEvent(data []byte) (RunEvent, error) {
	return DecodeRunEventWith(json.Unmarshal, data)
}

// DecodeRunEventWith is DecodeRunEvent with another JSON decoder (the read
// models rebuild with a faster one, held to this one by a fuzz test).
func DecodeRunEventWith(unmarshal func([]byte, any) error, data []byte) (RunEvent, error) {
	var e RunEvent
	if err := unmarshal(data, &e); err != nil {
		return e, err
	}
	if e.Type == runCanceled {
		e.Type = RunFailed
		e.fillKind()
		e.Failed.Error = CanceledError()
	}
	e.fillKind()
	return e, nil
}

// fillKind sets e's kind to its zero value when the log held none of its
// fields (all of them empty, so omitted): a reader of a decoded event
// finds its kind's type set, as Type says.
func (e *RunEvent) fillKind() {
	switch e.Type {
	case RunCreated:
		if e.Created == nil {
			e.Created = &Created{}
		}
	case ToolRunning:
		if e.ToolRun == nil {
			e.ToolRun = &ToolRun{}
		}
	case RunCompleted:
		if e.Completed == nil {
			e.Completed = &Completed{}
		}
	case RunFailed:
		if e.Failed == nil {
			e.Failed = &Failed{}
		}
	case RunRecorded:
		if e.Recorded == nil {
			e.Recorded = &Recorded{}
		}
	}
}

// PublicData is what a client sees of e on the event stream: no account,
// key or input, which stay in the log. Members are present exactly when
// the event type has them (a struct, not a map: it is encoded for every
// event a stream replays).
func (e RunEvent) PublicData() PublicEventData {
	e.fillKind()
	d := PublicEventData{RunNo: e.RunNo, At: e.At}
	switch e.Type {
	case RunStarted:
		d.Status = StatusRunning
	case ToolRunning:
		if st := e.ToolRun.Step; st != nil {
			d.Step, d.Steps, d.Tool, d.Message = &st.Index, &st.Total, &st.Tool, &st.Message
			if st.Total > 0 {
				p := float64(st.Index) / float64(st.Total)
				d.Progress = &p
			}
		}
	case RunCompleted:
		d.Status = StatusCompleted
		d.Summary, d.Output = &e.Completed.Summary, &e.Completed.Output
		d.ResultURL = resultURL(e.RunNo)
	case RunFailed:
		d.Status = StatusFailed
		d.Error, d.Refund = e.Failed.Error, &refund{Credits: e.Failed.Refunded}
		d.ResultURL = resultURL(e.RunNo)
	}
	return d
}

// PublicEventData is the data of one streamed event.
type PublicEventData struct {
	RunNo     string           `json:"run_no"`
	At        time.Time        `json:"at"`
	Status    Status           `json:"status,omitempty"`
	Step      *int             `json:"step,omitempty"`
	Steps     *int             `json:"steps,omitempty"`
	Tool      *string          `json:"tool,omitempty"`
	Message   *string          `json:"message,omitempty"`
	Progress  *float64         `json:"progress,omitempty"`
	Summary   *string          `json:"summary,omitempty"`
	Output    *json.RawMessage `json:"output,omitempty"`
	Error     *RunError        `json:"error,omitempty"`
	Refund    *refund          `json:"refund,omitempty"`
	ResultURL string           `json:"result_url,omitempty"`
}

// refund is the refund a failed event reports.
type refund struct {
	Credits int64 `json:"credits"`
}

// Key event types: what happened to an API key.
const (
	KeyCreated = "key_created"
	KeyRevoked = "key_revoked"
	// KeyUsed records that a key authenticated a request: at most one a
	// minute a key and node, for the last-used time.
	KeyUsed = "key_used"
)

// KeyEvent is one entry of an API key's log. The key itself is never stored,
// only its SHA-256.
type KeyEvent struct {
	Type      string    `json:"type"`
	V         int       `json:"v"`
	At        time.Time `json:"at"`
	KeyID     string    `json:"key_id"`
	AccountID string    `json:"account_id"`
	Hash      string    `json:"hash"`
	Prefix    string    `json:"prefix"`
	Name      string    `json:"name,omitempty"`
	// Prev and Sig chain and sign the key's events (ledger.Record).
	Prev string `json:"prev,omitempty"`
	Sig  string `json:"sig,omitempty"`
}

// Link is the event's prev and sig (ledger.Record).
func (e KeyEvent) Link() (string, string) { return e.Prev, e.Sig }

// Records are comparable (ledger.Record): this fails to compile if not.
var _ = KeyEvent{} == KeyEvent{} && PriceEvent{} == PriceEvent{}

// WithSig is the event signed with sig (ledger.Record).
func (e KeyEvent) WithSig(sig string) any { e.Sig = sig; return e }

// PriceEvent sets an App's price or marks it recalibrating.
type PriceEvent struct {
	Type          string    `json:"type"` // "price_set"
	V             int       `json:"v"`
	At            time.Time `json:"at"`
	Slug          string    `json:"slug"`
	CreditCost    int64     `json:"credit_cost"`
	Recalibrating bool      `json:"recalibrating"`
	// Actor is who set the price ("system:seed" for an App's first) and
	// Reason why.
	Actor  string `json:"actor,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Prev and Sig chain and sign the App's prices (ledger.Record).
	Prev string `json:"prev,omitempty"`
	Sig  string `json:"sig,omitempty"`
}

// Link is the event's prev and sig (ledger.Record).
func (e PriceEvent) Link() (string, string) { return e.Prev, e.Sig }

// WithSig is the event signed with sig (ledger.Record).
func (e PriceEvent) WithSig(sig string) any { e.Sig = sig; return e }

// SlotEvent claims or releases one platform-wide active-run slot.
type SlotEvent struct {
	Type  string `json:"type"` // "slot_claimed" | "slot_released"
	V     int    `json:"v"`
	RunNo string `json:"run_no"`
}

// JobEvent hands a created run to the executors.
type JobEvent struct {
	Type  string `json:"type"` // "run_queued"
	V     int    `json:"v"`
	RunNo string `json:"run_no"`
}
