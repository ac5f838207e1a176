package httpapi_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apprun/apprun/node"
	. "github.com/apprun/apprun/node/nodetest"
)

func TestStatementListsGrantsChargesAndRefunds(t *testing.T) {
	h := Start(t, WithLimits(NoLimits))
	a := h.Account(100)
	h.Do("POST", "/admin/v1/accounts/"+a.ID+"/credits", AdminToken, map[string]any{"reason": "test", "amount": 50})
	ok := h.Create(a, RunTestApp("ok"))
	h.WaitRun(a, ok)
	failed := h.Create(a, RunTestApp("fail"))
	h.WaitRun(a, failed)
	want := []struct {
		typ         string
		amount, bal float64
		runNo       string
	}{
		{"refund", 10, 140, failed},
		{"charge", -10, 130, failed},
		{"charge", -10, 140, ok},
		{"grant", 50, 150, ""},
		{"opening_grant", 100, 100, ""},
	}
	got := h.Pages(a, "/api/v1/account/ledger?limit=2")
	if len(got) != len(want) {
		t.Fatalf("statement has %d lines, want %d: %v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		run, _ := g["run_no"].(string)
		if g["type"] != w.typ || g["amount"] != w.amount || g["balance"] != w.bal || run != w.runNo || g["at"] == nil {
			t.Errorf("line %d: %v, want %s %v balance %v run %q", i, g, w.typ, w.amount, w.bal, w.runNo)
		}
	}
	// Another account sees only its own lines.
	b := h.Account(0)
	if lines := h.Do("GET", "/api/v1/account/ledger", b.Key, nil).JSON(t)["data"].([]any); len(lines) != 0 {
		t.Fatalf("an account opened with 0 Credits has lines: %v", lines)
	}
}

// A statement over a period reconciles: its opening balance plus its
// lines is its closing balance, in JSON and in CSV, for the account
// (its key) and for an operator (the admin API), and a statement ending
// at a moment closes at the balance then. Every grant and adjustment
// names its admin token's name and reason; an adjustment never takes a
// balance below zero; a parameter the statement does not take is refused
// by name.
func TestAStatementOverAPeriodReconcilesForTheAccountAndTheOperator(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	var logMu sync.Mutex
	h := Start(t, WithLimits(NoLimits), WithLogger(slog.New(slog.NewJSONHandler(lockedWriter{&logMu, &logs}, nil))),
		func(c *node.Config) { c.AdminTokens = map[string]string{"finance": "finance-token-0123456789"} })
	a := h.Account(100)
	grant := func(token, kind string, amount int, reason string) Response {
		t.Helper()
		body := map[string]any{"amount": amount}
		if reason != "" {
			body["reason"] = reason
		}
		return h.Do("POST", "/admin/v1/accounts/"+a.ID+"/"+kind, token, body)
	}
	if r := grant("finance-token-0123456789", "credits", 50, "goodwill for ticket 42"); r.Status != 200 {
		t.Fatalf("grant: %d %s", r.Status, r.Body)
	}
	if r := grant(AdminToken, "credits", 50, ""); r.Status != 400 || !strings.Contains(string(r.Body), "reason") {
		t.Fatalf("a grant without a reason: %d %s", r.Status, r.Body)
	}
	h.WaitRun(a, h.Create(a, RunTestApp("ok")))
	mid := time.Now().UTC()
	balanceAtMid, _ := h.Balance(a)
	time.Sleep(5 * time.Millisecond) // the lines after mid are stamped after it
	h.WaitRun(a, h.Create(a, RunTestApp("fail")))
	if r := grant("finance-token-0123456789", "adjustments", -1000, "too much"); r.Status != 422 || r.ErrorCode(t) != "invalid_input" {
		t.Fatalf("an adjustment below zero: %d %s", r.Status, r.Body)
	}
	if r := grant("finance-token-0123456789", "adjustments", -30, "over-grant on ticket 42"); r.Status != 200 || r.JSON(t)["balance"] != float64(110) {
		t.Fatalf("adjustment: %d %s", r.Status, r.Body)
	}

	for _, who := range []struct{ name, key, path string }{
		{"the account", a.Key, "/api/v1/account/ledger"},
		{"the operator", AdminToken, "/admin/v1/accounts/" + a.ID + "/ledger"},
	} {
		// The whole history, then the two halves around mid.
		all := h.Do("GET", who.path+"?limit=100", who.key, nil).JSON(t)
		if all["opening_balance"] != float64(0) || all["closing_balance"] != float64(110) {
			t.Fatalf("%s: the whole statement: %v", who.name, all)
		}
		Reconciles(t, who.name+", whole", all)
		before := h.Do("GET", who.path+"?limit=100&to="+mid.Format(time.RFC3339Nano), who.key, nil).JSON(t)
		after := h.Do("GET", who.path+"?limit=100&from="+mid.Format(time.RFC3339Nano), who.key, nil).JSON(t)
		Reconciles(t, who.name+", before mid", before)
		Reconciles(t, who.name+", after mid", after)
		if before["closing_balance"] != float64(balanceAtMid) || after["opening_balance"] != float64(balanceAtMid) {
			t.Fatalf("%s: closing before mid %v, opening after %v, want the balance then, %d", who.name, before["closing_balance"], after["opening_balance"], balanceAtMid)
		}
		lines := all["data"].([]any)
		byType := map[string]map[string]any{}
		for _, l := range lines {
			m := l.(map[string]any)
			byType[m["type"].(string)] = m
			if m["seq"] == nil || len(m["hash"].(string)) != 64 {
				t.Errorf("%s: a line without its sequence and hash: %v", who.name, m)
			}
		}
		if g := byType["grant"]; g["actor"] != "admin:finance" || g["reason"] != "goodwill for ticket 42" {
			t.Errorf("%s: the grant's line: %v", who.name, g)
		}
		if g := byType["adjustment"]; g["actor"] != "admin:finance" || g["reason"] != "over-grant on ticket 42" || g["amount"] != float64(-30) {
			t.Errorf("%s: the adjustment's line: %v", who.name, g)
		}
		if g := byType["opening_grant"]; g["actor"] != "admin:admin" {
			t.Errorf("%s: the opening grant's line: %v", who.name, g)
		}
		totals := all["totals"].(map[string]any)
		if totals["charge"] != float64(-20) || totals["refund"] != float64(10) || totals["adjustment"] != float64(-30) {
			t.Errorf("%s: totals %v", who.name, totals)
		}
		if apps := all["by_app"].([]any); len(apps) != 1 || apps[0].(map[string]any)["net"] != float64(-10) || apps[0].(map[string]any)["runs"] != float64(2) {
			t.Errorf("%s: by App %v", who.name, apps)
		}

		// The CSV of the same period: opening row, lines, closing row.
		r := h.Do("GET", who.path+"?format=csv&from="+mid.Format(time.RFC3339Nano), who.key, nil)
		if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/csv") {
			t.Fatalf("%s: csv: %d %s", who.name, r.Status, r.Body)
		}
		rows, err := csv.NewReader(bytes.NewReader(r.Body)).ReadAll()
		if err != nil || len(rows) < 3 || rows[1][2] != "opening_balance" || rows[len(rows)-1][2] != "closing_balance" {
			t.Fatalf("%s: csv rows %v (%v)", who.name, rows, err)
		}
		sum, _ := strconv.ParseInt(rows[1][4], 10, 64)
		for _, row := range rows[2 : len(rows)-1] {
			n, _ := strconv.ParseInt(row[3], 10, 64)
			sum += n
		}
		if closing, _ := strconv.ParseInt(rows[len(rows)-1][4], 10, 64); sum != closing || closing != 110 || len(rows)-3 != len(after["data"].([]any)) {
			t.Fatalf("%s: csv opening plus lines %d, closing %d, want 110 over %d lines: %v", who.name, sum, closing, len(after["data"].([]any)), rows)
		}

		for _, q := range []string{"?form=2026-01-01", "?from=yesterday", "?format=xml", "?from=2026-02-01&to=2026-01-01", "?format=csv&limit=5"} {
			if r := h.Do("GET", who.path+q, who.key, nil); r.Status != 400 || r.ErrorCode(t) != "invalid_request" {
				t.Errorf("%s: %s: %d %s, want 400", who.name, q, r.Status, r.Body)
			}
		}
	}
	// A date-only period: today's lines are all of them.
	today := time.Now().UTC().Format(time.DateOnly)
	if r := h.Do("GET", "/api/v1/account/ledger?from="+today+"&to="+today, a.Key, nil).JSON(t); r["closing_balance"] != float64(110) || len(r["data"].([]any)) != 6 {
		t.Errorf("today's statement: %v", r)
	}
	// The operator lists accounts and reads one.
	if r := h.Do("GET", "/admin/v1/accounts/"+a.ID, AdminToken, nil).JSON(t); r["balance"] != float64(110) {
		t.Errorf("an account, for the operator: %v", r)
	}
	if r := h.Do("GET", "/admin/v1/accounts?limit=1000", AdminToken, nil); r.Status != 200 || !strings.Contains(string(r.Body), a.ID) {
		t.Errorf("accounts: %d %s", r.Status, r.Body)
	}
	if r := h.Do("GET", "/admin/v1/accounts/acct_aaaaaaaaaaaaaaaa/ledger", AdminToken, nil); r.Status != 404 {
		t.Errorf("the statement of no account: %d %s", r.Status, r.Body)
	}
	if r := h.Do("GET", "/admin/v1/accounts/"+a.ID+"/ledger", a.Key, nil); r.Status != 401 {
		t.Errorf("an operator's statement with an API key: %d", r.Status)
	}
	// Every admin write is one log line naming its actor.
	logMu.Lock()
	defer logMu.Unlock()
	var actions []string
	for _, line := range strings.Split(logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "admin action" && m["account_id"] == a.ID {
			actions = append(actions, fmt.Sprint(m["actor"], " ", m["action"], " ", m["reason"]))
		}
	}
	want := []string{"admin:admin account_opened ", "admin:finance credits_granted goodwill for ticket 42", "admin:finance credits_adjusted over-grant on ticket 42"}
	if !slices.Equal(actions, want) {
		t.Errorf("admin log lines %q, want %q", actions, want)
	}
}

// Every price has its time, actor and reason in the App's price history;
// a price change without a reason is refused.
func TestThePriceHistoryNamesWhoChangedEachPriceAndWhy(t *testing.T) {
	t.Parallel()
	h := Start(t, func(c *node.Config) { c.AdminTokens = map[string]string{"pricing": "pricing-token-0123456789"} })
	path := "/admin/v1/apps/" + TestAppSlug + "/price"
	if r := h.Do("PUT", path, AdminToken, map[string]any{"credit_cost": 12}); r.Status != 400 || !strings.Contains(string(r.Body), "reason") {
		t.Fatalf("a price without a reason: %d %s", r.Status, r.Body)
	}
	if r := h.Do("PUT", path, "pricing-token-0123456789", map[string]any{"credit_cost": 12, "reason": "model cost rose"}); r.Status != 200 {
		t.Fatalf("price: %d %s", r.Status, r.Body)
	}
	r := h.Do("GET", "/admin/v1/apps/"+TestAppSlug+"/prices", AdminToken, nil)
	prices := r.JSON(t)["data"].([]any)
	if r.Status != 200 || len(prices) != 2 {
		t.Fatalf("history: %d %s", r.Status, r.Body)
	}
	first, last := prices[0].(map[string]any), prices[1].(map[string]any)
	if first["actor"] != "system:seed" || last["actor"] != "admin:pricing" || last["reason"] != "model cost rose" || last["credit_cost"] != float64(12) {
		t.Fatalf("history %v", prices)
	}
	if r := h.Do("GET", "/admin/v1/apps/nope/prices", AdminToken, nil); r.Status != 404 {
		t.Fatalf("history of no App: %d", r.Status)
	}
	// A charge names the price it was charged at: the history's newest.
	a := h.Account(100)
	run := h.Create(a, RunTestApp("ok"))
	h.WaitRun(a, run)
	for _, l := range h.Do("GET", "/api/v1/account/ledger", a.Key, nil).JSON(t)["data"].([]any) {
		if l := l.(map[string]any); l["type"] == "charge" && (l["price_at"] != last["at"] || l["amount"] != float64(-12)) {
			t.Fatalf("charge line %v, want price_at %v (the price of 12 in effect)", l, last["at"])
		}
	}
	csv := h.Do("GET", "/api/v1/account/ledger?format=csv", a.Key, nil)
	if want := fmt.Sprintf(",%s,%s,%s,", run, TestAppSlug, last["at"]); !strings.Contains(string(csv.Body), want) {
		t.Fatalf("the CSV's charge row lacks %q:\n%s", want, csv.Body)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
