package web

import (
	"net/http"

	"github.com/apprun/apprun/engine"
)

// dashboardRuns is how many runs the dashboard lists.
const dashboardRuns = 5

// firstRun is what the "first run in three steps" guide says
// (templates/_firstrun.html): to a visitor, the Credits an account starts
// with; to a new account, its balance.
type firstRun struct {
	SignedIn bool
	Credits  int64
}

// dashboard is GET / for a signed-in visitor: the balance, the last 30
// days' usage, the latest runs, and for an account with no run yet the
// first-run guide at the top.
func (s *Site) dashboard(w http.ResponseWriter, r *http.Request, v viewer) {
	acct, err := s.cfg.Reads.Account(v.AccountID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	runs, _, err := s.cfg.Reads.RunsOf(v.AccountID, 0, dashboardRuns)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	u, err := s.usageOf(v.AccountID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rows := make([]recentRun, 0, len(runs))
	for _, run := range runs {
		rows = append(rows, recentRun{Run: run, AppName: s.appName(run.AppSlug), Net: run.CreditCost - run.Refunded})
	}
	s.render(w, r, http.StatusOK, "dashboard", "Home", map[string]any{"Balance": acct.Balance, "Runs": rows,
		"Usage": viewOf(u), "FirstRun": firstRun{SignedIn: true, Credits: acct.Balance}, "Selling": s.selling()})
}

// recentRun is a run on the dashboard: Net is what it cost in the end,
// its charge less its refund.
type recentRun struct {
	engine.Run
	AppName string
	Net     int64
}
