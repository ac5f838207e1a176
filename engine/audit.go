package engine

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/subjects"
)

// Audit replays the event log and checks the ledger invariants: every
// ledger event carries the state its fold gives; every charge belongs to a
// run and every run has exactly one charge; a completed run is settled
// once and never refunded, a failed run refunded once by its charge; a run
// has at most one terminal event, and an unfinished run is neither settled
// nor refunded. It also checks the platform's slots: one run holds a slot
// at a time, and no slot is still held by a run that has ended. Feed it
// every message of the stream in order, then call Report.
type Audit struct {
	accounts map[string]*ledger.Account
	runs     map[string]*auditRun
	fenced   map[string]bool
	// slots holds the run each claimed platform slot is held by.
	slots map[string]string
	// purchases are the Credits each payment reference bought and had
	// revoked.
	purchases map[string]*auditPurchase
	// chain checks account events' signatures and links, when the
	// ledger's public key is known (NewAudit).
	chain *ledger.Chain
	// prices are the Credits each App's price events set, by the time
	// each was set: a charge names its price by that time (PriceAt).
	prices map[string]map[int64]int64
	// records checks prices' and keys' signatures and links, each kind
	// on its own (a log's prices were signed from a later point than its
	// account events).
	records map[subjects.Kind]*ledger.Chain
	report  AuditReport
}

type auditPurchase struct {
	account          string
	times            int
	credits, revoked int64
	// disputed is what a dispute took, owed its open debt.
	disputed, owed int64
}

type auditRun struct {
	account          string
	cost             int64
	created          bool
	status           Status
	terminals        int
	charges, settles int
	refunds          int
	charged          int64
	refunded         int64
	expired          bool
	canceled         bool // failed with the error code canceled
}

// AuditReport is what an audit found.
type AuditReport struct {
	Events                              int
	Accounts                            map[string]ledger.Account
	Runs                                map[string]Status
	Expired                             map[string]bool // runs removed after retention
	Completed, Failed, Canceled, Active int
	Granted, Charged, Refunded          int64
	// Purchased and Revoked are the Credits bought and taken back on a
	// refund, and Purchases the payments granted.
	Purchased, Revoked int64
	// Adjusted sums the operators' corrections (either sign).
	Adjusted int64
	// Disputed and Reinstated are the Credits disputes took and won
	// disputes gave back; Owed the debt of disputes not won.
	Disputed, Reinstated, Owed int64
	Purchases                  int
	// Fenced counts admissions whose outcome a node could not see and
	// fenced off (fence.go): never runs, never charged.
	Fenced int
	// Verified is whether signatures and links were checked (NewAudit);
	// SignedRecords counts the prices and keys checked, UnsignedRecords
	// those written before they were signed.
	SignedRecords, UnsignedRecords int
	// Signed counts the account events checked, Unsigned those written
	// before the ledger was signed.
	Verified         bool
	Signed, Unsigned int
	Violations       []string
}

// NewAudit starts an audit. With pub, it also checks every account
// event's signature with pub, and that it names the hash of the event
// before it on its account (ledger/chain.go); nil checks neither.
func NewAudit(pub ed25519.PublicKey) *Audit {
	a := &Audit{accounts: map[string]*ledger.Account{}, runs: map[string]*auditRun{}, fenced: map[string]bool{},
		slots: map[string]string{}, purchases: map[string]*auditPurchase{}, prices: map[string]map[int64]int64{}}
	if pub != nil {
		a.chain = ledger.NewChain(pub)
		a.records = map[subjects.Kind]*ledger.Chain{subjects.KindPrice: ledger.NewChain(pub), subjects.KindKey: ledger.NewChain(pub)}
		a.report.Verified = true
	}
	return a
}

// checkPriceInEffect checks a charge against the price it names (PriceAt):
// a price of its App set at that time, for the amount charged. Admissions
// read a copy of the price, which is not itself in the ledger: a copy
// forged to make an App cheaper shows here, on every charge made at it.
// Charges written before the ledger named their price are not checked.
func (a *Audit) checkPriceInEffect(seq uint64, ev ledger.Event) {
	if ev.PriceAt.IsZero() {
		return
	}
	cost, ok := a.prices[ev.App][ev.PriceAt.UnixNano()]
	switch {
	case !ok:
		a.violation("event %d: run %s charged %d Credits at a price of %s set at %s, which the log never set", seq, ev.RunNo, -ev.Amount, ev.App,
			ev.PriceAt.Format(time.RFC3339Nano))
	case cost != -ev.Amount:
		a.violation("event %d: run %s charged %d Credits at the price of %s set at %s, which was %d", seq, ev.RunNo, -ev.Amount, ev.App,
			ev.PriceAt.Format(time.RFC3339Nano), cost)
	}
}

// checkRecord checks a price's or a key's signature and link (on its
// subject's chain), when the audit has the key.
func (a *Audit) checkRecord(kind subjects.Kind, subject string, seq uint64, data []byte, r ledger.Record, typ string) {
	c := a.records[kind]
	if c == nil {
		return
	}
	if err := c.CheckRecord(subject, data, r); err != nil {
		a.violation("event %d on %s (%s): %v", seq, subject, typ, err)
	} else if _, sig := r.Link(); sig != "" {
		a.report.SignedRecords++
	}
}

func (a *Audit) violation(format string, args ...any) {
	a.report.Violations = append(a.report.Violations, fmt.Sprintf(format, args...))
}

func (a *Audit) run(runNo string) *auditRun {
	r := a.runs[runNo]
	if r == nil {
		r = &auditRun{}
		a.runs[runNo] = r
	}
	return r
}

// Apply feeds the message stored at seq.
func (a *Audit) Apply(subject string, seq uint64, data []byte) {
	a.report.Events++
	kind, id := subjects.Parse(subject)
	switch kind {
	case subjects.KindAccount:
		var ev ledger.Event
		if err := json.Unmarshal(data, &ev); err != nil {
			a.violation("event %d on %s: unreadable: %v", seq, subject, err)
			return
		}
		if a.chain != nil {
			if err := a.chain.Check(id, data, ev); err != nil {
				a.violation("event %d on %s (%s): %v", seq, subject, ev.Type, err)
			} else if ev.Sig != "" {
				a.report.Signed++
			}
		}
		a.applyLedger(id, seq, ev)
	case subjects.KindPrice:
		var ev PriceEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			a.violation("event %d on %s: unreadable: %v", seq, subject, err)
			return
		}
		if !ev.Recalibrating {
			if a.prices[ev.Slug] == nil {
				a.prices[ev.Slug] = map[int64]int64{}
			}
			a.prices[ev.Slug][ev.At.UnixNano()] = ev.CreditCost
		}
		a.checkRecord(kind, subject, seq, data, ev, ev.Type)
	case subjects.KindKey:
		var ev KeyEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			a.violation("event %d on %s: unreadable: %v", seq, subject, err)
			return
		}
		a.checkRecord(kind, subject, seq, data, ev, ev.Type)
	case subjects.KindRun:
		ev, err := DecodeRunEvent(data)
		if err != nil {
			a.violation("event %d on %s: unreadable: %v", seq, subject, err)
			return
		}
		a.applyRun(id, seq, ev)
	case subjects.KindSlot:
		var ev SlotEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			a.violation("event %d on %s: unreadable: %v", seq, subject, err)
			return
		}
		a.applySlot(id, seq, ev)
	case subjects.KindExpired:
		var ev RunExpired
		if err := json.Unmarshal(data, &ev); err != nil {
			a.violation("event %d on %s: unreadable: %v", seq, subject, err)
			return
		}
		// The run's own events were purged after retention; the marker
		// stands for its creation and its end.
		r := a.run(id)
		r.expired = true
		if !r.created {
			r.created, r.account, r.cost, r.status, r.terminals = true, ev.AccountID, ev.CreditCost, ev.Status, 1
			if ev.Status == legacyStatusCanceled { // written by an apprun before cancels were failures
				r.status, r.canceled = StatusFailed, true
			}
		}
	}
}

// applySlot follows which run holds platform slot id. (A slot's history
// is compacted: the log may keep only its last message.)
func (a *Audit) applySlot(id string, seq uint64, ev SlotEvent) {
	switch held := a.slots[id]; {
	case ev.Type != "slot_claimed":
		delete(a.slots, id)
	case held != "":
		a.violation("event %d: platform slot %s claimed by %s while %s holds it", seq, id, ev.RunNo, held)
		fallthrough
	default:
		a.slots[id] = ev.RunNo
	}
}

func (a *Audit) applyLedger(id string, seq uint64, ev ledger.Event) {
	acct := a.accounts[id]
	if acct == nil {
		if ev.Type != ledger.AccountOpened {
			a.violation("event %d: %s on account %s before it was opened", seq, ev.Type, id)
		}
		acct = &ledger.Account{}
		a.accounts[id] = acct
	}
	*acct = ledger.Apply(*acct, ev)
	if acct.Balance != ev.Balance || acct.Active != ev.Active {
		a.violation("event %d: account %s carries balance %d active %d, its log sums to %d and %d (drift)", seq, id, ev.Balance, ev.Active, acct.Balance, acct.Active)
	}
	// Only a revocation may take a balance below zero (Credits spent
	// before their payment was refunded); a charge never does.
	if acct.Balance < 0 && ev.Type == ledger.RunCharged || acct.Active < 0 {
		a.violation("event %d: account %s went negative (balance %d, active %d) on %s", seq, id, acct.Balance, acct.Active, ev.Type)
	}
	switch ev.Type {
	case ledger.AccountOpened, ledger.CreditsGranted:
		a.report.Granted += ev.Amount
	case ledger.CreditsAdjusted:
		a.report.Adjusted += ev.Amount
	case ledger.RunCharged:
		r := a.run(ev.RunNo)
		r.charges++
		r.charged -= ev.Amount
		a.report.Charged -= ev.Amount
		a.checkPriceInEffect(seq, ev)
	case ledger.CreditsPurchased:
		p := a.purchases[ev.Ref]
		if p == nil {
			p = &auditPurchase{account: id}
			a.purchases[ev.Ref] = p
		}
		p.times++
		p.credits += ev.Amount
		a.report.Purchased += ev.Amount
		a.report.Purchases++
		if p.times > 1 {
			a.violation("event %d: payment %s granted %d times, want once", seq, ev.Ref, p.times)
		}
	case ledger.CreditsRevoked:
		p := a.purchases[ev.Ref]
		a.report.Revoked -= ev.Amount
		switch {
		case p == nil:
			a.violation("event %d: %d Credits revoked for payment %s, which granted none", seq, -ev.Amount, ev.Ref)
		case p.account != id:
			a.violation("event %d: payment %s of account %s revoked from account %s", seq, ev.Ref, p.account, id)
		default:
			p.revoked -= ev.Amount
			if p.revoked > p.credits {
				a.violation("event %d: payment %s revoked %d Credits, more than the %d it bought", seq, ev.Ref, p.revoked, p.credits)
			}
		}
	case ledger.CreditsDisputed, ledger.CreditsReinstated:
		a.dispute(seq, id, ev)
	case ledger.RunSettled:
		a.run(ev.RunNo).settles++
	case ledger.RunRefunded:
		r := a.run(ev.RunNo)
		r.refunds++
		r.refunded += ev.Amount
		a.report.Refunded += ev.Amount
	}
}

// dispute checks a dispute's event against its purchase: a dispute takes
// no more than the purchase has left, and a reinstatement gives back
// what its dispute took, and clears its debt.
func (a *Audit) dispute(seq uint64, id string, ev ledger.Event) {
	p := a.purchases[ev.Ref]
	switch {
	case p == nil:
		a.violation("event %d: %s for payment %s, which granted none", seq, ev.Type, ev.Ref)
		return
	case p.account != id:
		a.violation("event %d: payment %s of account %s disputed on account %s", seq, ev.Ref, p.account, id)
		return
	}
	if ev.Type == ledger.CreditsDisputed {
		p.disputed, p.owed = -ev.Amount, ev.Owed
		p.revoked -= ev.Amount
		a.report.Disputed -= ev.Amount
		a.report.Owed += ev.Owed
		if p.revoked+ev.Owed > p.credits {
			a.violation("event %d: payment %s disputed %d Credits, more than the %d it has left", seq, ev.Ref, -ev.Amount+ev.Owed, p.credits-p.revoked-ev.Amount)
		}
		return
	}
	if ev.Amount != p.disputed {
		a.violation("event %d: payment %s reinstated %d Credits, its dispute took %d", seq, ev.Ref, ev.Amount, p.disputed)
	}
	p.revoked -= ev.Amount
	a.report.Reinstated += ev.Amount
	a.report.Owed -= p.owed
	p.disputed, p.owed = 0, 0
}

func (a *Audit) applyRun(runNo string, seq uint64, ev RunEvent) {
	ev.fillKind()
	if ev.Type == RunFenced {
		// Stored only on an empty subject (compare-and-set): the run's
		// admission never can be. A fence after a created event is a bug.
		if r := a.runs[runNo]; r != nil && r.created {
			a.violation("event %d: run %s fenced after it was created", seq, runNo)
		}
		a.fenced[runNo] = true
		a.report.Fenced++
		return
	}
	r := a.run(runNo)
	switch ev.Type {
	case RunCreated:
		if r.created {
			a.violation("event %d: run %s created twice", seq, runNo)
		}
		if a.fenced[runNo] {
			a.violation("event %d: run %s created after its admission was fenced", seq, runNo)
		}
		r.created, r.account, r.cost, r.status = true, ev.Created.AccountID, ev.Created.CreditCost, StatusQueued
	case RunStarted, ToolRunning, RunRecorded:
		if r.terminals > 0 {
			a.violation("event %d: run %s has %s after its terminal event", seq, runNo, ev.Type)
		} else {
			r.status = StatusRunning
		}
	case RunCompleted, RunFailed:
		r.terminals++
		r.status = map[RunEventType]Status{RunCompleted: StatusCompleted, RunFailed: StatusFailed}[ev.Type]
		r.canceled = ev.Failed != nil && ev.Failed.Error != nil && ev.Failed.Error.Code == FailCanceled
	}
}

// Report cross-checks every run against its charge and returns the findings.
func (a *Audit) Report() AuditReport {
	if a.chain != nil {
		a.report.Unsigned = a.chain.Unsigned
	}
	a.report.UnsignedRecords = 0
	for _, c := range a.records {
		a.report.UnsignedRecords += c.Unsigned
	}
	rep := a.report
	rep.Accounts = map[string]ledger.Account{}
	for id, acct := range a.accounts {
		rep.Accounts[id] = *acct
	}
	rep.Runs, rep.Expired = map[string]Status{}, map[string]bool{}
	for _, no := range slices.Sorted(maps.Keys(a.runs)) {
		r := a.runs[no]
		if !r.created {
			a.violation("run %s: charged %d time(s) but has no run", no, r.charges)
			continue
		}
		rep.Runs[no] = r.status
		if r.expired {
			rep.Expired[no] = true
		}
		switch {
		case r.charges != 1:
			a.violation("run %s: charged %d times, want once", no, r.charges)
		case r.charged != r.cost:
			a.violation("run %s: charged %d, its price was %d", no, r.charged, r.cost)
		case r.terminals > 1:
			a.violation("run %s: %d terminal events", no, r.terminals)
		}
		switch r.status {
		case StatusCompleted:
			rep.Completed++
			if r.settles != 1 || r.refunds != 0 {
				a.violation("run %s: completed, settled %d and refunded %d times (want 1 and 0)", no, r.settles, r.refunds)
			}
		case StatusFailed:
			rep.Failed++
			if r.canceled {
				rep.Canceled++
			}
			if r.refunds != 1 || r.settles != 0 || r.refunded != r.cost {
				a.violation("run %s: %s, refunded %d times (%d Credits) and settled %d times (want once, %d, 0)", no, r.status, r.refunds, r.refunded, r.settles, r.cost)
			}
		default:
			rep.Active++
			if r.refunds+r.settles != 0 {
				a.violation("run %s: not finished but settled %d and refunded %d times", no, r.settles, r.refunds)
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(a.slots)) {
		no := a.slots[id]
		if r := a.runs[no]; r == nil || !r.created || r.status == StatusCompleted || r.status == StatusFailed {
			// Lost to the platform's ceiling until an operator frees it.
			a.violation("platform slot %s: still held by run %s, which has ended or does not exist", id, no)
		}
	}
	active := map[string]int{}
	for _, r := range a.runs {
		if r.created && r.status != StatusCompleted && r.status != StatusFailed {
			active[r.account]++
		}
	}
	for id, acct := range a.accounts {
		if acct.Active != active[id] {
			a.violation("account %s: %d active runs on its ledger, %d unfinished runs in the log", id, acct.Active, active[id])
		}
	}
	rep.Violations = a.report.Violations
	return rep
}
