package web

import (
	"encoding/csv"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/service"
	"github.com/gorilla/mux"
)

func (s *Site) keysPage(w http.ResponseWriter, r *http.Request, v viewer) {
	f, _ := s.sessions.takeFlash(r.Context(), r)
	s.showKeys(w, r, v, http.StatusOK, f.Key, f.Notice, f.Problem)
}

func (s *Site) showKeys(w http.ResponseWriter, r *http.Request, v viewer, status int, created *service.NewKey, notice, problem string) {
	keys, err := s.cfg.Reads.KeysOf(v.AccountID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// Active keys first, newest first; revoked ones below.
	slices.SortStableFunc(keys, func(a, b engine.Key) int {
		if a.Revoked != b.Revoked {
			if a.Revoked {
				return 1
			}
			return -1
		}
		return b.CreatedAt.Compare(a.CreatedAt)
	})
	data := map[string]any{"Keys": keys, "Created": created, "Notice": notice, "MaxName": engine.MaxKeyName}
	if problem != "" {
		s.render(w, r, status, "keys", "API keys", data, problem)
		return
	}
	s.render(w, r, status, "keys", "API keys", data)
}

// createKey makes a key, then redirects (post-redirect-get): the page the
// redirect lands on shows the key once, so a reload neither shows it
// again nor makes another. The key travels sealed beside the session
// (flash.go), never in a URL.
func (s *Site) createKey(w http.ResponseWriter, r *http.Request, v viewer) {
	k, err := s.cfg.Engine.CreateKey(r.Context(), v.AccountID, r.PostFormValue("name"))
	var e *engine.Error
	if errors.As(err, &e) {
		problem := e.Message // the most keys an account may hold, said in words
		if e.Code == engine.CodeInvalidInput {
			problem = fmt.Sprintf("Give the key a name of at most %d characters, on one line.", engine.MaxKeyName)
		}
		s.redirectWith(w, r, "/settings/keys", flash{Problem: problem})
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	_ = s.cfg.Reads.WaitFor(r.Context(), k.Seq)
	s.redirectWith(w, r, "/settings/keys", flash{Key: &k})
}

// redirectWith keeps f for the page at path and redirects there.
func (s *Site) redirectWith(w http.ResponseWriter, r *http.Request, path string, f flash) {
	if err := s.sessions.setFlash(r.Context(), r, f); err != nil {
		s.fail(w, r, err)
		return
	}
	http.Redirect(w, r, path, http.StatusSeeOther)
}

// ownKey is one of the viewer's keys; another account's key looks like
// no key at all.
func (s *Site) ownKey(w http.ResponseWriter, r *http.Request, v viewer) (engine.Key, bool) {
	id := mux.Vars(r)["key_id"]
	keys, err := s.cfg.Reads.KeysOf(v.AccountID)
	if err != nil {
		s.fail(w, r, err)
		return engine.Key{}, false
	}
	for _, k := range keys {
		if k.KeyID == id {
			return k, true
		}
	}
	s.problem(w, r, http.StatusNotFound, "There is no such key on your account.")
	return engine.Key{}, false
}

// revokePage asks before a key is revoked.
func (s *Site) revokePage(w http.ResponseWriter, r *http.Request, v viewer) {
	if k, ok := s.ownKey(w, r, v); ok {
		s.render(w, r, http.StatusOK, "revoke", "Revoke a key", map[string]any{"Key": k})
	}
}

func (s *Site) revokeKey(w http.ResponseWriter, r *http.Request, v viewer) {
	k, ok := s.ownKey(w, r, v)
	if !ok {
		return
	}
	if k.Revoked {
		s.redirectWith(w, r, "/settings/keys", flash{Notice: fmt.Sprintf("Key %s… was already revoked.", k.Prefix)})
		return
	}
	seq, err := s.cfg.Engine.RevokeKey(r.Context(), k.KeyID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	_ = s.cfg.Reads.WaitFor(r.Context(), seq)
	s.redirectWith(w, r, "/settings/keys", flash{Notice: fmt.Sprintf("Key %s… was revoked: it no longer works on the API.", k.Prefix)})
}

// statementRow is a line of the Credits statement, with the App of its run.
type statementRow struct {
	ledger.Line
	AppName string
}

// statementPerPage is the length of a page of the Credits statement.
const statementPerPage = 50

// statement reads the account's statement newest first between from and
// to (dates, inclusive; zero: open), from the line below the one at log
// sequence before (0: the newest), up to max lines; next is the cursor of
// the page after (0: none). A cursor is a line's place in the log, so a
// page holds the same lines however many come after it.
func (s *Site) statement(accountID string, from, to time.Time, before uint64, max int) (rows []statementRow, next uint64, err error) {
	apps := map[string]string{}
	for {
		lines, more, err := s.cfg.Reads.Statement(accountID, before, 200)
		if err != nil {
			return nil, 0, err
		}
		for _, l := range lines {
			if !to.IsZero() && !l.At.Before(to.AddDate(0, 0, 1)) {
				continue
			}
			if !from.IsZero() && l.At.Before(from) {
				return rows, 0, nil // newest first: the rest is older still
			}
			if len(rows) == max {
				return rows, rows[len(rows)-1].Seq, nil
			}
			row := statementRow{Line: l}
			if l.AppSlug != "" { // the ledger keeps it: named after the run expired
				row.AppName = s.appName(l.AppSlug)
			} else if l.RunNo != "" { // a line written before the ledger kept it
				name, ok := apps[l.RunNo]
				if !ok {
					if run, err := s.cfg.Reads.Run(l.RunNo); err == nil {
						name = s.appName(run.AppSlug)
					}
					apps[l.RunNo] = name
				}
				row.AppName = name
			}
			rows = append(rows, row)
		}
		if more == 0 {
			return rows, 0, nil
		}
		before = more
	}
}

func (s *Site) creditsPage(w http.ResponseWriter, r *http.Request, v viewer) {
	acct, err := s.cfg.Reads.Account(v.AccountID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	from, to, problem := dayRange(r.URL.Query(), "line")
	before, _ := strconv.ParseUint(r.URL.Query().Get("before"), 10, 64)
	rows, next, err := s.statement(v.AccountID, from, to, before, statementPerPage)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := url.Values{}
	if !from.IsZero() {
		q.Set("from", from.Format(time.DateOnly))
	}
	if !to.IsZero() {
		q.Set("to", to.Format(time.DateOnly))
	}
	pages := map[string]string{}
	if before != 0 { // a later page links back to the newest of the range
		pages["Newest"] = "/credits?" + q.Encode()
	}
	if next != 0 {
		older := url.Values{"before": {strconv.FormatUint(next, 10)}, "from": q["from"], "to": q["to"]}
		pages["Older"] = "/credits?" + older.Encode()
	}
	f, _ := s.sessions.takeFlash(r.Context(), r)
	csv := "/credits/statement.csv" // none for a range that cannot hold a line (its CSV would be refused)
	if !from.IsZero() && !to.IsZero() && to.Before(from) {
		csv = ""
	} else if len(q) > 0 {
		csv += "?" + q.Encode()
	}
	data := map[string]any{"Account": acct, "Lines": rows, "Pages": pages, "From": q.Get("from"), "To": q.Get("to"),
		"CSV": csv, "Selling": s.selling(), "Notice": purchaseNotice(r.URL.Query().Get("purchase"))}
	if s.selling() {
		data["Packs"] = s.cfg.Seller.Packs()
	}
	if f.Problem != "" && problem == "" {
		problem = f.Problem
	}
	if problem != "" {
		s.render(w, r, http.StatusOK, "credits", "Credits", data, problem)
		return
	}
	s.render(w, r, http.StatusOK, "credits", "Credits", data)
}

// statementCSV exports the statement (the same date range) as CSV, for a
// billing review: every line, oldest last, with its App and run.
func (s *Site) statementCSV(w http.ResponseWriter, r *http.Request, v viewer) {
	from, to, problem := dayRange(r.URL.Query(), "line")
	if problem != "" {
		s.problem(w, r, http.StatusBadRequest, problem)
		return
	}
	rows, _, err := s.statement(v.AccountID, from, to, 0, 100_000)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="apprun-statement.csv"`)
	w.Header().Set("Cache-Control", "no-store")
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"time_utc", "type", "amount", "balance", "run_no", "app", "reference"})
	for _, l := range rows {
		_ = cw.Write([]string{l.At.UTC().Format(time.RFC3339Nano), l.Type, strconv.FormatInt(l.Amount, 10),
			strconv.FormatInt(l.Balance, 10), l.RunNo, l.AppName, l.Reference})
	}
	cw.Flush()
}
