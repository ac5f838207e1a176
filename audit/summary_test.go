package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/apprun/apprun/audit"
	. "github.com/apprun/apprun/node/nodetest"
)

// --json prints one object a reviewer's tools can read, and --account an
// account's statement as the log gives it, over --from and --to: its
// closing balance is the account's balance, and a period after the last
// line opens and closes there with no lines.
func TestTheAuditSummarisesAsJSONWithAnAccountsStatement(t *testing.T) {
	t.Parallel()
	h := Start(t, WithLimits(NoLimits))
	a, _ := Activity(t, h)
	balance, _ := h.Balance(a)
	h.Stop()
	run := func(o audit.Options) audit.Summary {
		t.Helper()
		o.DataDir, o.JSON, o.Account = h.Dir, true, a.ID
		var out bytes.Buffer
		err := audit.Run(context.Background(), o, &out)
		var sum audit.Summary
		if jerr := json.Unmarshal(out.Bytes(), &sum); err != nil || jerr != nil {
			t.Fatalf("audit --json: %v %v\n%s", err, jerr, out.String())
		}
		return sum
	}
	sum := run(audit.Options{})
	if !sum.Passed || sum.Accounts != 2 || sum.Runs.All != 3 || sum.Runs.Failed != 1 || sum.Credits.Charged == 0 || sum.Account == nil {
		t.Fatalf("summary %+v", sum)
	}
	st := sum.Account
	if st.OpeningBalance != 0 || st.ClosingBalance != balance || len(sum.AccountLines) < 4 || st.Totals["grant"] != 50 || st.Totals["opening_grant"] != 500 {
		t.Fatalf("the account's statement: %+v, %d lines; want closing %d", st, len(sum.AccountLines), balance)
	}
	later := run(audit.Options{From: time.Now().Add(time.Hour)})
	if later.Account.OpeningBalance != balance || later.Account.ClosingBalance != balance || len(later.AccountLines) != 0 {
		t.Fatalf("a period after the last line: %+v", later.Account)
	}
}
