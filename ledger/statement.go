package ledger

import (
	"sort"
	"time"
)

// Statement is an account's lines over a period, with the balance before
// it and after it: OpeningBalance plus the sum of the lines' amounts is
// ClosingBalance, and the balance at any moment is the closing balance
// of a statement that ends there.
type Statement struct {
	AccountID string `json:"account_id"`
	// From and To bound the period: From included, To excluded (nil: from
	// the account's first line, through its newest).
	From           *time.Time `json:"from,omitempty"`
	To             *time.Time `json:"to,omitempty"`
	OpeningBalance int64      `json:"opening_balance"`
	ClosingBalance int64      `json:"closing_balance"`
	// Totals sums the lines' amounts by type, and ByApp the charges and
	// refunds by App (each type present once, even at 0).
	Totals map[string]int64 `json:"totals"`
	ByApp  []AppTotal       `json:"by_app"`
	// Lines are the period's lines, oldest first.
	Lines []Line `json:"-"`
}

// AppTotal is what an App's runs were charged, and refunded, in a period.
type AppTotal struct {
	AppSlug  string `json:"app_slug"`
	Runs     int    `json:"runs"`
	Charged  int64  `json:"charged"`
	Refunded int64  `json:"refunded"`
	// Net is charged plus refunded: what the App's runs cost (≤ 0).
	Net int64 `json:"net"`
}

// StatementOf is the statement of lines (an account's, oldest first, as
// the log ordered them) from from (included) to to (excluded); a zero
// time leaves that end open.
func StatementOf(accountID string, lines []Line, from, to time.Time) Statement {
	st := Statement{AccountID: accountID, Totals: map[string]int64{}}
	if !from.IsZero() {
		st.From = &from
	}
	if !to.IsZero() {
		st.To = &to
	}
	for _, t := range LineTypes {
		st.Totals[t] = 0
	}
	apps := map[string]*AppTotal{}
	for _, l := range lines {
		if !from.IsZero() && l.At.Before(from) {
			st.OpeningBalance = l.Balance
			continue
		}
		if !to.IsZero() && !l.At.Before(to) {
			break
		}
		st.Lines = append(st.Lines, l)
		st.Totals[l.Type] += l.Amount
		if l.Type == "charge" || l.Type == "refund" {
			app := l.AppSlug
			t := apps[app]
			if t == nil {
				t = &AppTotal{AppSlug: app}
				apps[app] = t
			}
			if l.Type == "charge" {
				t.Runs++
				t.Charged += l.Amount
			} else {
				t.Refunded += l.Amount
			}
			t.Net += l.Amount
		}
	}
	st.ClosingBalance = st.OpeningBalance
	if n := len(st.Lines); n > 0 {
		st.ClosingBalance = st.Lines[n-1].Balance
	}
	st.ByApp = make([]AppTotal, 0, len(apps))
	for _, t := range apps {
		st.ByApp = append(st.ByApp, *t)
	}
	sort.Slice(st.ByApp, func(i, j int) bool { return st.ByApp[i].AppSlug < st.ByApp[j].AppSlug })
	return st
}

// Reconciles says whether the opening balance plus the lines' amounts is
// the closing balance, and each line's balance the one before plus its
// amount.
func (s Statement) Reconciles() bool {
	b := s.OpeningBalance
	for _, l := range s.Lines {
		b += l.Amount
		if b != l.Balance {
			return false
		}
	}
	return b == s.ClosingBalance
}
