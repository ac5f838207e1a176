package service

import (
	"time"

	"github.com/apprun/apprun/engine"
	"github.com/apprun/apprun/ledger"
	"github.com/apprun/apprun/service/store"
	"github.com/apprun/apprun/subjects"
)

// finishWrite is the one atomic write that ends run (its log at sequence
// last), whoever ends it (its executor, or its owner's cancel): the
// account's settle or refund acctEv (compare-and-set on the account at
// acctSeq), the release of its platform slot, the terminal event term
// (compare-and-set on the run: a second end is impossible) and its
// webhook jobs.
func finishWrite(run engine.Run, last uint64, acctEv ledger.Event, acctSeq uint64, term engine.RunEvent, hookKeep time.Duration) []store.Entry {
	entries := []store.Entry{{Subject: subjects.Account(run.AccountID), Value: acctEv, Expect: store.ExpectSeq(acctSeq)}}
	if run.Slot > 0 {
		entries = append(entries, store.Entry{Subject: subjects.Slot(run.Slot),
			Value: engine.SlotEvent{Type: "slot_released", V: engine.EventVersion, RunNo: run.RunNo}})
	}
	entries = append(entries, store.Entry{Subject: subjects.Run(run.RunNo), Value: term, Expect: store.ExpectSeq(last)})
	return append(entries, hookJobs(run, time.Time{}, hookKeep)...) // the first sending: not a redelivery
}
