// Package service runs apprun's use cases on its ports (package port):
// create, cancel and follow a run, accounts, API keys, prices, brand
// contexts, purchases and webhooks. Each use case takes its command,
// checks all of its input (field errors are data, engine.FieldError), asks
// the domain (package engine) for the decision and writes the events it
// returns. Below the use cases sits the machinery they need on a shared
// log: the store with its compare-and-set retries, copies and caches, the
// fence and resolve of a write whose answer was lost, the executor, the
// webhook dispatcher, the live fan-out with its replay cache, and
// retention.
//
// # The log
//
// One stream (APPRUN) holds every fact, one subject per entity:
// apprun.acct.<id> (ledger events, see package ledger), apprun.run.<run_no>
// (the run's event log; stream sequences are the SSE ids),
// apprun.job.<run_no> (work for the executors), apprun.key.<id>,
// apprun.price.<slug>, apprun.brand.<id>, apprun.slot.<n> (the
// platform-wide active-run slots) and apprun.idem.<account>.<key hash>
// (Idempotency-Key records, written only in the admission batch, or as a
// fence after an admission whose outcome was lost). The newest message on
// a subject is the
// entity's state, so a write guarded by
// Nats-Expected-Last-Subject-Sequence is a compare-and-set on it.
//
// # Admission
//
// Creating a run is one atomic batch (ADR-50) of four messages:
//
//	apprun.acct.<id>   run_charged, CAS on the account (balance, active runs)
//	apprun.slot.<n>    slot_claimed, CAS on a free platform slot
//	apprun.job.<no>    run_queued, CAS on apprun.price.<slug> (price lock)
//	apprun.run.<no>    created, CAS "no message yet"
//
// With an Idempotency-Key, a fifth: the key's completed record, CAS on
// where the key stood when the request read it. All are stored or none
// is, and a refused create writes nothing. Two creates that race for the same
// Credits, the same account ceiling or the same slot cannot both commit:
// the loser's batch is rejected and it re-reads and decides again (402, 429
// or success). A price changed between reading and committing rejects the
// batch and answers pricing_not_ready.
//
// A batch whose answer never came (ErrAmbiguous) is resolved before the
// node answers (fence.go): a fence on the run's subject expecting "no
// message yet" is stored, and the batch never can be (503, nothing
// charged), or it conflicts with the run's created event (201).
//
// # Run states
//
//	queued ──started──▶ running ──completed──▶ completed
//	   │                   │
//	   └──────failed───────┴────failed───────▶ failed (refunded)
//
// The executor (a shared durable consumer on apprun.job.*, so one node
// runs a given run at a time; ExecuteRun is one delivery) appends started, one tool_running per step,
// and one terminal event, each with a CAS on the run's subject. The
// terminal event is written in one atomic batch with the account's
// run_settled (completed: the charge is consumed) or run_refunded (failed:
// the charge comes back) and the slot's release. Hence the ledger
// invariants:
//
//   - every run_charged has exactly one run_settled or run_refunded, written
//     atomically with the run's only terminal event;
//   - an account's balance is the sum of its grants, charges and refunds,
//     and every ledger event carries the balance after it;
//   - a run exists if and only if its charge does.
//
// # Failure handling
//
// A node that stops mid-run leaves the job unacknowledged; JetStream
// redelivers it and the next executor executes the App again from the
// start, appending to the same log (started is not written twice). An App error or timeout fails the run
// and refunds it. If the log cannot be reached, a request fails with
// internal_error before anything is written, or, for an atomic batch,
// nothing of it is.
//
// # Retention
//
// A sweeper (retention.go) finds runs that ended longer ago than their
// App's retention. For each it writes apprun.expired.<run_no> (CAS: one
// node wins), which carries the run's final status and price, and purges
// the run's and job's subjects. The read models drop the run on the
// marker; a rebuild never sees it. Ledger events are never purged.
//
// # Live events
//
// The stream republishes run events to core NATS (apprun.live.run.*). Each
// node has one subscription and fans events out to its SSE followers with
// bounded buffers (package service/live). A follower registers first, replays the log
// after its Last-Event-ID, then follows live, dropping duplicates by
// sequence and re-reading the log when Nats-Last-Sequence shows a gap.
package service
