package engine

import (
	"encoding/json"
	"time"
)

// Status of a run. queued → running → completed | failed; a run may also
// fail straight from queued (for example when it times out before starting).
type Status string

// Run statuses.
const (
	StatusQueued    Status = "queued"
	StatusRunning   Status = "running"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
)

// legacyStatusCanceled is the status an apprun before 2026-11 gave a
// canceled run; only old expiry markers still carry it.
const legacyStatusCanceled Status = "canceled"

// Run is the state of a run, a pure fold of its events.
type Run struct {
	RunNo          string `json:"run_no"`
	AccountID      string `json:"account_id"`
	AppSlug        string `json:"app_slug"`
	Status         Status `json:"status"`
	CreditCost     int64  `json:"credit_cost"`
	BrandContextID string `json:"brand_context_id,omitempty"`
	WebhookURL     string `json:"webhook_url,omitempty"`
	// WebhookEndpoints are the account's endpoints when the run was made.
	WebhookEndpoints []string        `json:"webhook_endpoints,omitempty"`
	Slot             int             `json:"slot"`
	CreatedAt        time.Time       `json:"created_at"`
	StartedAt        *time.Time      `json:"started_at,omitempty"`
	FinishedAt       *time.Time      `json:"finished_at,omitempty"`
	Summary          string          `json:"summary,omitempty"`
	Output           json.RawMessage `json:"output,omitempty"`
	Error            *RunError       `json:"error,omitempty"`
	Refunded         int64           `json:"refunded,omitempty"`
	// Usage is what the run's model calls used (nil: it made none).
	Usage      *RunUsage `json:"usage,omitempty"`
	CreatedSeq uint64    `json:"created_seq"`
	LastSeq    uint64    `json:"last_seq"`
}

// ApplyRun folds the event stored at seq into r.
func ApplyRun(r Run, e RunEvent, seq uint64) Run {
	r.LastSeq = seq
	e.fillKind()
	switch e.Type {
	case RunCreated:
		c := e.Created
		r = Run{RunNo: e.RunNo, AccountID: c.AccountID, AppSlug: c.AppSlug, Status: StatusQueued,
			CreditCost: c.CreditCost, BrandContextID: c.BrandContextID, Slot: c.Slot, WebhookURL: c.WebhookURL,
			WebhookEndpoints: c.WebhookEndpoints,
			CreatedAt:        e.At, CreatedSeq: seq, LastSeq: seq}
	case RunStarted:
		r.Status = StatusRunning
		at := e.At
		r.StartedAt = &at
	case RunCompleted:
		r.Status = StatusCompleted
		at := e.At
		r.FinishedAt = &at
		r.Summary, r.Output = e.Completed.Summary, e.Completed.Output
	case RunFailed:
		r.Status = StatusFailed
		at := e.At
		r.FinishedAt = &at
		r.Error, r.Refunded = e.Failed.Error, e.Failed.Refunded
	case RunRecorded:
		if en := e.Recorded.Entry; en != nil && en.Kind == RecordModel {
			r.Usage = r.Usage.add(en.Step, en.Usage)
		}
	}
	return r
}

// Terminal reports whether the run has ended.
func (r Run) Terminal() bool {
	return r.Status == StatusCompleted || r.Status == StatusFailed
}

// Canceled reports whether the run ended because its owner canceled it:
// a failed run with the error code canceled.
func (r Run) Canceled() bool {
	return r.Status == StatusFailed && r.Error != nil && r.Error.Code == FailCanceled
}

// resultURL is the relative path of a run's result, which a terminal
// event names (the API's own, httpapi/run.go).
func resultURL(runNo string) string { return "/api/v1/runs/" + runNo }

// WebhookTargets are where the run's terminal event is delivered: its
// webhook_url, then the account's endpoints as they were at creation.
func (r Run) WebhookTargets() []string {
	var out []string
	if r.WebhookURL != "" {
		out = append(out, r.WebhookURL)
	}
	return append(out, r.WebhookEndpoints...)
}
