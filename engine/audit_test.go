package engine_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
)

type logged struct {
	subject string
	v       any
}

func acctEv(typ ledger.EventType, amount int64, run string, balance int64, active int) logged {
	return logged{"apprun.acct.acct_a", ledger.Event{Type: typ, V: 1, AccountID: "acct_a", Amount: amount, RunNo: run, Balance: balance, Active: active}}
}

func buyEv(typ ledger.EventType, amount int64, ref string, balance int64) logged {
	return logged{"apprun.acct.acct_a", ledger.Event{Type: typ, V: 1, AccountID: "acct_a", Amount: amount, Ref: ref, Balance: balance}}
}

func runEv(no string, typ engine.RunEventType) logged {
	return logged{"apprun.run." + no, engine.RunEvent{Type: typ, V: 1, RunNo: no, At: time.Unix(0, 0), Created: &engine.Created{AccountID: "acct_a", CreditCost: 10}}}
}

func slotEv(slot, typ, run string) logged {
	return logged{"apprun.slot." + slot, engine.SlotEvent{Type: typ, V: 1, RunNo: run}}
}

func audit(events ...logged) engine.AuditReport {
	a := engine.NewAudit(nil)
	for i, e := range events {
		data, _ := json.Marshal(e.v)
		a.Apply(e.subject, uint64(i+1), data)
	}
	return a.Report()
}

func TestAuditFindsEveryBrokenInvariant(t *testing.T) {
	open := acctEv(ledger.AccountOpened, 100, "", 100, 0)
	charge := acctEv(ledger.RunCharged, -10, "run_a", 90, 1)
	created := runEv("run_a", engine.RunCreated)
	cases := []struct {
		name   string
		events []logged
		want   string // "" = clean
	}{
		{"completed and settled", []logged{open, charge, created, runEv("run_a", engine.RunCompleted), acctEv(ledger.RunSettled, 0, "run_a", 90, 0)}, ""},
		{"failed and refunded", []logged{open, charge, created, runEv("run_a", engine.RunFailed), acctEv(ledger.RunRefunded, 10, "run_a", 100, 0)}, ""},
		{"still running", []logged{open, charge, created, runEv("run_a", engine.RunStarted)}, ""},
		{"charge without a run", []logged{open, charge}, "has no run"},
		{"run charged twice", []logged{open, charge, acctEv(ledger.RunCharged, -10, "run_a", 80, 2), created}, "charged 2 times"},
		{"refund of a completed run", []logged{open, charge, created, runEv("run_a", engine.RunCompleted), acctEv(ledger.RunRefunded, 10, "run_a", 100, 0)}, "completed, settled 0 and refunded 1"},
		{"double refund", []logged{open, charge, created, runEv("run_a", engine.RunFailed), acctEv(ledger.RunRefunded, 10, "run_a", 100, 0), acctEv(ledger.RunRefunded, 10, "run_a", 110, -1)}, "refunded 2 times"},
		{"failed without refund", []logged{open, charge, created, runEv("run_a", engine.RunFailed), acctEv(ledger.RunSettled, 0, "run_a", 90, 0)}, "failed, refunded 0 times"},
		{"two terminal events", []logged{open, charge, created, runEv("run_a", engine.RunCompleted), runEv("run_a", engine.RunFailed), acctEv(ledger.RunSettled, 0, "run_a", 90, 0)}, "2 terminal events"},
		{"balance drift", []logged{open, acctEv(ledger.CreditsGranted, 5, "", 110, 0)}, "drift"},
		{"refund of an unfinished run", []logged{open, charge, created, acctEv(ledger.RunRefunded, 10, "run_a", 100, 0)}, "not finished"},
		{"a fenced admission", []logged{open, runEv("run_a", engine.RunFenced)}, ""},
		{"created after its fence", []logged{open, runEv("run_a", engine.RunFenced), charge, created}, "created after its admission was fenced"},
		{"fenced after it was created", []logged{open, charge, created, runEv("run_a", engine.RunFenced)}, "fenced after it was created"},
		{"a purchase spent, then refunded below zero", []logged{acctEv(ledger.AccountOpened, 0, "", 0, 0), buyEv(ledger.CreditsPurchased, 100, "cs_1", 100),
			acctEv(ledger.RunCharged, -10, "run_a", 90, 1), created, runEv("run_a", engine.RunCompleted), acctEv(ledger.RunSettled, 0, "run_a", 90, 0),
			buyEv(ledger.CreditsRevoked, -100, "cs_1", -10), buyEv(ledger.CreditsPurchased, 50, "cs_2", 40)}, ""},
		{"a payment granted twice (a doctored log)", []logged{open, buyEv(ledger.CreditsPurchased, 100, "cs_1", 200), buyEv(ledger.CreditsPurchased, 100, "cs_1", 300)}, "payment cs_1 granted 2 times"},
		{"more revoked than bought", []logged{open, buyEv(ledger.CreditsPurchased, 100, "cs_1", 200), buyEv(ledger.CreditsRevoked, -60, "cs_1", 140), buyEv(ledger.CreditsRevoked, -60, "cs_1", 80)}, "revoked 120 Credits, more than the 100"},
		{"a revocation of nothing bought", []logged{open, buyEv(ledger.CreditsRevoked, -10, "cs_9", 90)}, "which granted none"},
		{"a dispute won", []logged{open, buyEv(ledger.CreditsPurchased, 100, "cs_1", 200), buyEv(ledger.CreditsDisputed, -100, "cs_1", 100),
			buyEv(ledger.CreditsReinstated, 100, "cs_1", 200)}, ""},
		{"a dispute of nothing bought", []logged{open, buyEv(ledger.CreditsDisputed, -10, "cs_9", 90)}, "which granted none"},
		{"a dispute of more than is left", []logged{open, buyEv(ledger.CreditsPurchased, 100, "cs_1", 200), buyEv(ledger.CreditsRevoked, -60, "cs_1", 140),
			buyEv(ledger.CreditsDisputed, -60, "cs_1", 80)}, "more than the 40 it has left"},
		{"a reinstatement of more than was taken", []logged{open, buyEv(ledger.CreditsPurchased, 100, "cs_1", 200), buyEv(ledger.CreditsDisputed, -50, "cs_1", 150),
			buyEv(ledger.CreditsReinstated, 100, "cs_1", 250)}, "reinstated 100 Credits, its dispute took 50"},
		{"a charge below zero", []logged{open, acctEv(ledger.RunCharged, -110, "run_a", -10, 1), created}, "went negative"},
		{"a slot held while its run runs", []logged{open, charge, slotEv("1", "slot_claimed", "run_a"), created}, ""},
		{"a slot released at the end", []logged{open, charge, slotEv("1", "slot_claimed", "run_a"), created, runEv("run_a", engine.RunCompleted),
			acctEv(ledger.RunSettled, 0, "run_a", 90, 0), slotEv("1", "slot_released", "run_a")}, ""},
		{"a slot kept after the end", []logged{open, charge, slotEv("1", "slot_claimed", "run_a"), created, runEv("run_a", engine.RunCompleted),
			acctEv(ledger.RunSettled, 0, "run_a", 90, 0)}, "platform slot 1: still held by run run_a"},
		{"a slot claimed twice", []logged{open, charge, slotEv("1", "slot_claimed", "run_a"), created,
			slotEv("1", "slot_claimed", "run_b")}, "platform slot 1 claimed by run_b while run_a holds it"},
		{"a slot claimed twice by one run", []logged{open, charge, slotEv("1", "slot_claimed", "run_a"), created,
			slotEv("1", "slot_claimed", "run_a")}, "platform slot 1 claimed by run_a while run_a holds it"},
		{"a slot held by no run", []logged{open, slotEv("2", "slot_claimed", "run_z")}, "platform slot 2: still held by run run_z"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := audit(c.events...)
			all := strings.Join(rep.Violations, "\n")
			if c.want == "" && len(rep.Violations) > 0 {
				t.Fatalf("clean log reported: %s", all)
			}
			if c.want != "" && !strings.Contains(all, c.want) {
				t.Fatalf("violations %q do not include %q", all, c.want)
			}
		})
	}
}

func TestAuditSumsTheLedger(t *testing.T) {
	rep := audit(acctEv(ledger.AccountOpened, 100, "", 100, 0), acctEv(ledger.RunCharged, -10, "run_a", 90, 1),
		runEv("run_a", engine.RunCreated), runEv("run_a", engine.RunFailed), acctEv(ledger.RunRefunded, 10, "run_a", 100, 0))
	if rep.Granted != 100 || rep.Charged != 10 || rep.Refunded != 10 || rep.Failed != 1 || rep.Accounts["acct_a"].Balance != 100 {
		t.Fatalf("report %+v", rep)
	}
}

// A dispute that took what the balance held owes the rest: the audit
// shows the debt until the dispute is won.
func TestAuditShowsADisputesDebtUntilItIsWon(t *testing.T) {
	open := acctEv(ledger.AccountOpened, 0, "", 0, 0)
	bought := buyEv(ledger.CreditsPurchased, 100, "cs_1", 100)
	spent := acctEv(ledger.CreditsAdjusted, -70, "", 30, 0)
	disputed := logged{"apprun.acct.acct_a", ledger.Event{Type: ledger.CreditsDisputed, V: 1, AccountID: "acct_a", Amount: -30, Owed: 70, Ref: "cs_1"}}
	rep := audit(open, bought, spent, disputed)
	if len(rep.Violations) != 0 || rep.Disputed != 30 || rep.Owed != 70 || rep.Adjusted != -70 {
		t.Fatalf("open dispute: %+v", rep)
	}
	rep = audit(open, bought, spent, disputed, buyEv(ledger.CreditsReinstated, 30, "cs_1", 30))
	if len(rep.Violations) != 0 || rep.Reinstated != 30 || rep.Owed != 0 {
		t.Fatalf("won dispute: %+v", rep)
	}
}
