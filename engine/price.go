package engine

import "time"

// Price is an App's current price as the log says it.
type Price struct {
	Slug          string `json:"slug"`
	CreditCost    int64  `json:"credit_cost"`
	Recalibrating bool   `json:"recalibrating"`
	// Seq is the sequence of the price event as read (0: none yet), and
	// At the time it was set.
	Seq uint64    `json:"-"`
	At  time.Time `json:"-"`
}

// MaxPrice bounds a price in Credits.
const MaxPrice = 1_000_000
