package engine

// Price is an App's current price as the log says it.
type Price struct {
	Slug          string `json:"slug"`
	CreditCost    int64  `json:"credit_cost"`
	Recalibrating bool   `json:"recalibrating"`
	// Seq is the sequence of the price event (0: none yet), or of the copy
	// of it that an admission read (check names the copy).
	Seq uint64 `json:"-"`
}

// Ready reports whether a run can be priced now.
func (p Price) Ready() bool { return p.Seq != 0 && !p.Recalibrating }

// MaxPrice bounds a price in Credits.
const MaxPrice = 1_000_000
