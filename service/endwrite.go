package service

import (
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/subjects"
)

// finishWrite is the one atomic write that ends run (its log at sequence
// last), whoever ends it (its executor, or its owner's cancel): the
// account's settle or refund acctEv (compare-and-set on the account at
// acctSeq), the release of its platform slot, the terminal event term
// (compare-and-set on the run: a second end is impossible) and its
// webhook jobs.
func finishWrite(run engine.Run, last uint64, acctEv ledger.Event, acctSeq uint64, term engine.RunEvent, hookKeep time.Duration) []entry {
	entries := []entry{{subject: subjects.Account(run.AccountID), value: acctEv, expect: expectSeq(acctSeq)}}
	if run.Slot > 0 {
		entries = append(entries, entry{subject: subjects.Slot(run.Slot),
			value: engine.SlotEvent{Type: "slot_released", V: engine.EventVersion, RunNo: run.RunNo}})
	}
	entries = append(entries, entry{subject: subjects.Run(run.RunNo), value: term, expect: expectSeq(last)})
	return append(entries, hookJobs(run, time.Time{}, hookKeep)...) // the first sending: not a redelivery
}
