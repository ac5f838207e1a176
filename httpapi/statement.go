package httpapi

import (
	"encoding/csv"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
)

// A statement: an account's lines over a period (from, to), with the
// balance before and after it and totals by type and by App, as JSON
// (the lines paged newest first, like runs) or as CSV (every line of the
// period, oldest first, between an opening and a closing row). The
// customer's is GET /api/v1/account/ledger, an operator's of any account
// GET /admin/v1/accounts/{account_id}/ledger: the same answer.

// statementParams are the query parameters a statement takes: any other
// is refused by name.
var statementParams = []string{"limit", "cursor", "from", "to", "format"}

// maxStatementLines bounds the lines one statement reads: an account
// with more is asked for a shorter period (none comes near it).
const maxStatementLines = 100_000

// statementQuery is a statement's parameters, read.
type statementQuery struct {
	page     page
	from, to time.Time
	csv      bool
}

func statementQueryOf(r *http.Request) (statementQuery, error) {
	var q statementQuery
	vals := r.URL.Query()
	names := make([]string, 0, len(vals))
	for name := range vals {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !slices.Contains(statementParams, name) {
			return q, errorf(engine.CodeInvalidRequest, "unknown query parameter %q: a statement takes %v", name, statementParams)
		}
	}
	var err error
	if q.page, err = pageOf(r); err != nil {
		return q, err
	}
	if q.from, err = timeParam(vals, "from", false); err != nil {
		return q, err
	}
	if q.to, err = timeParam(vals, "to", true); err != nil {
		return q, err
	}
	if !q.from.IsZero() && !q.to.IsZero() && !q.from.Before(q.to) {
		return q, errorf(engine.CodeInvalidRequest, "from must be before to")
	}
	format, err := valueOnce(vals, "format")
	if err != nil {
		return q, err
	}
	switch format {
	case "", "json":
	case "csv":
		q.csv = true
		if vals.Has("limit") || vals.Has("cursor") {
			return q, errorf(engine.CodeInvalidRequest, "format=csv gives the whole period: it takes no limit or cursor")
		}
	default:
		return q, errorf(engine.CodeInvalidRequest, "format must be json or csv, not %q", format)
	}
	return q, nil
}

// timeParam reads name as RFC 3339 or as a date (YYYY-MM-DD, UTC). A
// date's start is that day's midnight; as an end (to), a date includes
// its whole day.
func timeParam(vals map[string][]string, name string, end bool) (time.Time, error) {
	v, err := valueOnce(vals, name)
	if err != nil || v == "" {
		return time.Time{}, err
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	t, err := time.Parse(time.DateOnly, v)
	if err != nil {
		return time.Time{}, errorf(engine.CodeInvalidRequest, "%s must be an RFC 3339 time or a date like 2026-11-23, not %q", name, v)
	}
	if end {
		t = t.AddDate(0, 0, 1)
	}
	return t, nil
}

// writeStatement answers accountID's statement for r.
func (a *API) writeStatement(w http.ResponseWriter, r *http.Request, accountID string) {
	q, err := statementQueryOf(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	lines, more, err := a.cfg.Reads.Lines(accountID, maxStatementLines)
	if err == nil && more {
		err = errorf(engine.CodeInvalidRequest, "this account has more than %d statement lines, more than a statement reads", maxStatementLines)
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	st := ledger.StatementOf(accountID, lines, q.from, q.to)
	if q.csv {
		writeStatementCSV(w, st)
		return
	}
	// The period's lines newest first, from below the cursor.
	var page []ledger.Line
	var next uint64
	for i := len(st.Lines) - 1; i >= 0; i-- {
		l := st.Lines[i]
		if q.page.before != 0 && l.Seq >= q.page.before {
			continue
		}
		if len(page) == q.page.limit {
			next = page[len(page)-1].Seq
			break
		}
		page = append(page, l)
	}
	if page == nil {
		page = []ledger.Line{}
	}
	var cursor *string
	if next != 0 {
		s := strconv.FormatUint(next, 10)
		cursor = &s
	}
	writeJSON(w, http.StatusOK, struct {
		ledger.Statement
		Data       []ledger.Line `json:"data"`
		NextCursor *string       `json:"next_cursor"`
	}{st, page, cursor})
}

// statementColumns are the CSV's columns.
var statementColumns = []string{"seq", "time_utc", "type", "amount", "balance", "run_no", "app_slug", "price_at", "actor", "reason",
	"reference", "payment_intent", "pack", "paid", "currency", "hash"}

// writeStatementCSV writes st as CSV: an opening_balance row, the lines
// oldest first, a closing_balance row. The opening balance plus the
// amounts is the closing balance.
func writeStatementCSV(w http.ResponseWriter, st ledger.Statement) {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="apprun-statement-`+st.AccountID+`.csv"`)
	w.Header().Set("Cache-Control", "no-store")
	cw := csv.NewWriter(w)
	_ = cw.Write(statementColumns)
	edge := func(kind string, at *time.Time, balance int64) {
		row := make([]string, len(statementColumns))
		row[2], row[4] = kind, strconv.FormatInt(balance, 10)
		if at != nil {
			row[1] = at.UTC().Format(time.RFC3339Nano)
		}
		_ = cw.Write(row)
	}
	edge("opening_balance", st.From, st.OpeningBalance)
	for _, l := range st.Lines {
		paid, priceAt := "", ""
		if l.Paid != 0 {
			paid = strconv.FormatInt(l.Paid, 10)
		}
		if !l.PriceAt.IsZero() {
			priceAt = l.PriceAt.UTC().Format(time.RFC3339Nano)
		}
		_ = cw.Write([]string{strconv.FormatUint(l.Seq, 10), l.At.UTC().Format(time.RFC3339Nano), l.Type,
			strconv.FormatInt(l.Amount, 10), strconv.FormatInt(l.Balance, 10), l.RunNo, l.AppSlug, priceAt, l.Actor, l.Reason,
			l.Reference, l.PaymentIntent, l.Pack, paid, l.Currency, l.Hash})
	}
	edge("closing_balance", st.To, st.ClosingBalance)
	cw.Flush()
}
