package engine

import (
	"time"
)

// FinishedRun is a run that has ended, as retention needs it.
type FinishedRun struct {
	RunNo      string
	AccountID  string
	AppSlug    string
	Status     Status
	CreditCost int64
	FinishedAt time.Time
}

// RunExpired records that a run's log was removed after its App's
// retention window. It carries what the ledger audit needs of the run; the
// run's charge and settle or refund stay in the account's log for good.
type RunExpired struct {
	Type       string    `json:"type"` // "run_expired"
	V          int       `json:"v"`
	At         time.Time `json:"at"`
	RunNo      string    `json:"run_no"`
	AccountID  string    `json:"account_id"`
	AppSlug    string    `json:"app_slug"`
	Status     Status    `json:"status"`
	CreditCost int64     `json:"credit_cost"`
}
