// Package engine is apprun's domain: its vocabulary and its rules, with no
// storage, cache or clock of its own. It holds the events (one stream of
// facts, one Go type a kind: event.go), a run and its state machine
// (run.go, ApplyRun), the Apps and their input validation (app.go), the
// admission decision (admission.go, Admit), ids (id.go), the rate and
// concurrency limits, keys, logins, prices and retention as values, the
// audit fold over the log (audit.go: it tells a message's kind by its
// subject, the one place engine reads package subjects) and the error table (errors.json →
// errors_generated.go, go generate ./engine).
//
// Package service runs the use cases on these rules; package port names
// what they need of the infrastructure; package subjects is the log's
// layout. engine imports no NATS, no net/http and no bbolt; a test
// (deps_test.go) holds that rule on its whole dependency graph.
package engine
