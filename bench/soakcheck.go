package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/apprun/apprun/audit"
)

// The soak's end checks: nothing stuck, and the money exact, as the API
// tells it and as `apprun audit` replays it from the log.

// runState is a run as the soak's end checks read it.
type runState struct {
	RunNo      string     `json:"run_no"`
	Status     string     `json:"status"`
	CreditCost float64    `json:"credit_cost"`
	CreatedAt  time.Time  `json:"created_at"`
	StartedAt  *time.Time `json:"started_at"`
}

// String names the run, its status and how old it is, for a report.
func (r runState) String() string {
	s := fmt.Sprintf("%s %s, created %s ago", r.RunNo, r.Status, time.Since(r.CreatedAt).Round(time.Second))
	if r.StartedAt != nil {
		s += fmt.Sprintf(", started %s ago", time.Since(*r.StartedAt).Round(time.Second))
	}
	return s
}

func (r runState) terminal() bool { return r.Status == "completed" || r.Status == "failed" }

// accountRuns lists every run of key's account, on srv.
func accountRuns(ctx context.Context, srv *Server, key string) ([]runState, error) {
	var runs []runState
	cursor := ""
	for {
		path := "/api/v1/runs?limit=100"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		st, data, err := srv.do(ctx, "GET", path, key, nil)
		if err != nil || st != 200 {
			return nil, fmt.Errorf("list runs: %d %s %v", st, data, err)
		}
		var page struct {
			Data []runState `json:"data"`
			Next *string    `json:"next_cursor"`
		}
		if err := json.Unmarshal(data, &page); err != nil {
			return nil, err
		}
		runs = append(runs, page.Data...)
		if page.Next == nil || *page.Next == "" {
			return runs, nil
		}
		cursor = *page.Next
	}
}

// awaitTerminal waits, up to within, until every run of every account
// is terminal (completed or failed, a cancel being a failure) as node
// srv reads them, and returns the runs by account and those still not
// terminal at the end: stuck. Every 15 s it logs those it waits for.
func awaitTerminal(ctx context.Context, srv *Server, keys []string, within time.Duration, logf func(string, ...any)) ([][]runState, []string, error) {
	deadline := time.Now().Add(within)
	said := time.Now()
	for {
		all := make([][]runState, len(keys))
		var stuck []string
		for i, k := range keys {
			runs, err := accountRuns(ctx, srv, k)
			if err != nil {
				return nil, nil, err
			}
			all[i] = runs
			for _, r := range runs {
				if !r.terminal() {
					stuck = append(stuck, r.String())
				}
			}
		}
		if len(stuck) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return all, stuck, ctx.Err()
		}
		if time.Since(said) >= 15*time.Second {
			said = time.Now()
			logf("%d runs not terminal yet: %s", len(stuck), strings.Join(stuck[:min(3, len(stuck))], "; "))
		}
		pause(ctx, time.Second)
	}
}

// money is what the API says of the accounts' Credits.
type money struct {
	balances, granted, charged, refunded int64
	// wrong lists the accounts whose figures disagree.
	wrong []string
}

// checkMoney reads each account's balance, statement and runs on srv:
// its balance must be its grant less what its completed runs cost (a
// failed or canceled run is refunded), its statement must close at that
// balance, and nothing may still be held for a run.
func checkMoney(ctx context.Context, srv *Server, keys []string, runs [][]runState, grant int64) (money, error) {
	var m money
	for i, k := range keys {
		var acct struct {
			Balance int64 `json:"balance"`
			Active  int64 `json:"active_runs"`
		}
		var stmt struct {
			Closing int64            `json:"closing_balance"`
			Totals  map[string]int64 `json:"totals"`
		}
		for _, q := range []struct {
			path string
			into any
		}{{"/api/v1/account", &acct}, {"/api/v1/account/ledger?limit=1", &stmt}} {
			st, data, err := srv.do(ctx, "GET", q.path, k, nil)
			if err != nil || st != 200 {
				return m, fmt.Errorf("GET %s: %d %s %v", q.path, st, data, err)
			}
			if err := json.Unmarshal(data, q.into); err != nil {
				return m, err
			}
		}
		spent := int64(0)
		for _, r := range runs[i] {
			if r.Status == "completed" {
				spent += int64(r.CreditCost)
			}
		}
		if want := grant - spent; acct.Balance != want || stmt.Closing != acct.Balance || acct.Active != 0 {
			m.wrong = append(m.wrong, fmt.Sprintf("account %d: balance %d, statement closes at %d, %d runs held; want %d (grant %d less %d spent on completed runs) and none held",
				i, acct.Balance, stmt.Closing, acct.Active, want, grant, spent))
		}
		m.balances += acct.Balance
		m.granted += stmt.Totals["opening_grant"] + stmt.Totals["grant"]
		m.charged -= stmt.Totals["charge"]
		m.refunded += stmt.Totals["refund"]
	}
	return m, nil
}

// runAudit stops node i and runs `apprun audit --json` on its data
// directory, reading the log through the other nodes' client ports, as
// an operator would. It returns the summary (nil when there was none to
// read) and the audit's output.
func runAudit(ctx context.Context, bin string, c *cluster, i int) (*audit.Summary, string, error) {
	srv := c.nodes[i]
	srv.halt()
	var urls []string
	for j, a := range c.nats {
		if j != i {
			urls = append(urls, "nats://"+a)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "audit", "--json", "--data", filepath.Join(srv.dir, "data"), "--nats-url", strings.Join(urls, ","))
	cmd.Env = append(os.Environ(), c.env()...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	runErr := cmd.Run()
	var sum audit.Summary
	if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
		return nil, out.String() + errOut.String(), fmt.Errorf("apprun audit: %v: %s%s", runErr, out.String(), errOut.String())
	}
	return &sum, out.String() + errOut.String(), runErr
}

// problems lists what an audit found wrong.
func problems(s *audit.Summary) []string {
	var p []string
	for _, list := range [][]string{s.Damage, s.Violations, s.Findings, s.LedgerCopy, s.Mismatches, s.DamagedRecords} {
		p = append(p, list...)
	}
	return p
}
